"""What the status screens show, read from PostgreSQL (the record) and Redis (live health).

Per client, the answer to the question a client asks on the phone: for each file it should
get, the version we have, the version it last received, when, its size, hash, receipt and
age, and if it is behind, why.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.core.paginator import Paginator
from django.db.models import BooleanField, Case, Count, Exists, ExpressionWrapper, F, OuterRef, Q, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from omnium.clients.models import Client, Destination
from omnium.conf import omnium_setting
from omnium.delivery import health
from omnium.delivery.models import DeliveryAttempt, DeliveryState, DeliverySwitch, SenderState
from omnium.delivery.operations import dead_mans_switch
from omnium.feeds.models import FeedDocument
from omnium.safe_errors import plain_and_technical
from omnium.transports import registry as transport_registry

PAGE_SIZE = 100
RECENT_EVENTS = 30
# What each health event says on the overview, in words.
EVENT_WORDS = {
    "alert_opened": "alert opened", "alert_resolved": "alert resolved", "attempt_abandoned": "send abandoned",
    "dead_lettered": "refused (dead letter)", "paused": "paused", "recovered": "recovered", "resend": "resend asked",
    "resumed": "resumed", "retry_now": "retry asked", "failed": "send failed",
}
STATE_FILTERS = ("failing", "behind", "paused", "backing_off", "off", "running")


@dataclass
class SwitchOff:
    """Something a person switched off that stops this destination: what, why, by whom, when."""

    what: str  # client switched off · disabled · fenced · paused
    reason: str
    by: object  # the user, or None if unknown (deleted since, or set outside the admin)
    at: datetime | None


@dataclass
class DestinationStatus:
    destination: Destination
    status: str  # running · paused · backing_off · failing · off
    red: bool
    files_owed: int
    dead_letters: int
    failures: int
    last_success_at: datetime | None
    last_error: str
    paused_reason: str
    stalled: bool | None
    switch_offs: list[SwitchOff] = field(default_factory=list)
    files: list = field(default_factory=list)
    freshness_svg: str = ""

    @property
    def error_plain(self) -> str:
        """The last error as a person reads it (the technical text if it has no sentence)."""
        plain, technical = plain_and_technical(self.last_error)
        return plain or technical

    @property
    def error_technical(self) -> str:
        plain, technical = plain_and_technical(self.last_error)
        return technical if plain else ""


def with_state(destinations):
    """``destinations`` annotated in SQL with their state, files owed, dead letters and
    whether they are behind, so a page of thousands is filtered, counted and ordered by
    PostgreSQL (no query per row)."""
    off = Q(enabled=False) | Q(fenced=True) | Q(client__active=False)
    state = Case(
        When(off, then=Value("off")),
        When(sender__paused=True, then=Value(health.Status.PAUSED.value)),
        When(sender__consecutive_failures__gt=F("fast_retries"), then=Value(health.Status.FAILING.value)),
        When(sender__consecutive_failures__gt=0, then=Value(health.Status.BACKING_OFF.value)),
        default=Value(health.Status.RUNNING.value),
    )
    states = DeliveryState.objects.filter(destination=OuterRef("pk"))
    owed = states.filter(wanted_seq__gt=F("sent_seq"), dead_lettered_at__isnull=True)
    behind_since = timezone.now() - timedelta(seconds=omnium_setting("BEHIND_AFTER_S"))
    return destinations.annotate(
        state=state,
        owed_total=_count(owed),
        dead_total=_count(states.filter(dead_lettered_at__isnull=False)),
        behind=Exists(owed.filter(wanted_at__lt=behind_since)),
    ).annotate(red=ExpressionWrapper(Q(state__in=["failing", "off"]) | Q(dead_total__gt=0),
                                     output_field=BooleanField()))


def _count(states) -> Coalesce:
    counted = states.order_by().values("destination").annotate(total=Count("pk")).values("total")
    return Coalesce(Subquery(counted), 0)


def filtered(destinations, state: str = "", client_id: str = "", kind: str = ""):
    """Narrowed by state (or "behind"), client and kind, red ones first."""
    annotated = with_state(destinations)
    if client_id.isdigit():
        annotated = annotated.filter(client_id=int(client_id))
    if kind:
        annotated = annotated.filter(kind=kind)
    counts = state_counts(annotated)
    if state == "behind":
        annotated = annotated.filter(behind=True)
    elif state in STATE_FILTERS:
        annotated = annotated.filter(state=state)
    return annotated.order_by("-red", "client__name", "name", "pk"), counts


def state_counts(annotated) -> dict[str, int]:
    """How many destinations are in each state, how many are behind, and the total."""
    per_state = dict(annotated.order_by().values_list("state").annotate(total=Count("pk")))
    counts = {name: per_state.get(name, 0) for name in STATE_FILTERS}
    counts["behind"] = annotated.filter(behind=True).count()
    counts["total"] = sum(per_state.values())
    return counts


def statuses_of(destinations) -> list[DestinationStatus]:
    """One row per destination of an annotated (``with_state``) page; health read in one go."""
    page = list(destinations.select_related("client__switched_off_by", "sender__paused_by", "disabled_by",
                                            "fenced_by"))
    stalled = health.read_stalled([d.pk for d in page])
    return [_status_row(destination, stalled.get(destination.pk)) for destination in page]


def _status_row(destination: Destination, stalled: bool | None) -> DestinationStatus:
    sender = _sender_of(destination)
    return DestinationStatus(
        destination=destination, status=destination.state, red=destination.red,
        files_owed=destination.owed_total, dead_letters=destination.dead_total,
        failures=sender.consecutive_failures if sender else 0,
        last_success_at=sender.last_success_at if sender else None,
        last_error=sender.last_error if sender else "",
        paused_reason=sender.paused_reason if sender else "",
        stalled=stalled, switch_offs=switch_offs(destination, sender),
    )


def switch_offs(destination: Destination, sender: SenderState | None) -> list[SwitchOff]:
    client, found = destination.client, []
    if not client.active:
        found.append(SwitchOff("client switched off", client.switched_off_reason, client.switched_off_by,
                               client.switched_off_at))
    if not destination.enabled:
        found.append(SwitchOff("disabled", destination.disabled_reason, destination.disabled_by,
                               destination.disabled_at))
    if destination.fenced:
        found.append(SwitchOff("fenced", destination.fence_reason, destination.fenced_by, destination.fenced_at))
    if sender is not None and sender.paused:
        found.append(SwitchOff("paused", sender.paused_reason, sender.paused_by, sender.paused_at))
    return found


def delivery_switch() -> DeliverySwitch:
    return DeliverySwitch.current()


def _sender_of(destination: Destination) -> SenderState | None:
    try:
        return destination.sender
    except SenderState.DoesNotExist:  # never sent yet
        return None


def destination_statuses(destinations) -> list[DestinationStatus]:
    return statuses_of(with_state(destinations).order_by("-red", "client__name", "name", "pk"))


def overview(state: str = "", client_id: str = "", kind: str = "", page: str = "1") -> dict:
    destinations, counts = filtered(Destination.objects.all(), state, client_id, kind)
    page_obj = Paginator(destinations, PAGE_SIZE).get_page(page)
    return {
        "lanes_without_a_worker": dead_mans_switch.silent_lanes_for_screens(),
        "delivery_switch": delivery_switch(),
        "switched_off": list(Client.objects.filter(active=False).select_related("switched_off_by").order_by("name")),
        "destinations": statuses_of(page_obj.object_list),
        "page_obj": page_obj, "counts": counts,
        "chosen": {"state": state, "client": client_id, "kind": kind},
        "clients": Client.objects.order_by("name").values_list("pk", "name"),
        "kinds": transport_registry.choices(), "state_filters": STATE_FILTERS,
        "recent_events": recent_events(),
    }


def recent_events(limit: int = RECENT_EVENTS) -> list[dict]:
    """The newest health events (recoveries, alerts, refusals, operators' controls), in words
    and with their destination, newest first; none while Redis is away."""
    events = health.read_events(limit)
    ids = {event.get("destination") for event in events} - {None}
    destinations = Destination.objects.select_related("client").in_bulk(ids)
    return [{"at": datetime.fromtimestamp(event["at"], tz=UTC),
             "what": EVENT_WORDS.get(event["kind"], event["kind"].replace("_", " ")),
             "destination": destinations.get(event.get("destination")),
             "detail": " ".join(f"{name}: {value}" for name, value in event.items()
                                if name not in ("at", "kind", "destination") and value not in ("", None))}
            for event in events]


def client_status(client: Client) -> list[DestinationStatus]:
    rows = destination_statuses(client.destinations.all())
    for row in rows:
        row.files = file_rows(row)
        row.freshness_svg = freshness_svg(row.destination)
    return rows


def file_rows(row: DestinationStatus) -> list[dict]:
    states = list(DeliveryState.objects.filter(destination=row.destination).order_by("doc_key"))
    have = dict(FeedDocument.objects.filter(doc_key__in=[s.doc_key for s in states]).values_list("doc_key", "seq"))
    return [_file_row(state, have.get(state.doc_key), row) for state in states]


def _file_row(state: DeliveryState, have_seq: int | None, row: DestinationStatus) -> dict:
    behind = have_seq is not None and state.sent_seq < have_seq
    sha256 = bytes(state.sent_bytes_sha256).hex() if state.sent_bytes_sha256 else ""
    return {
        "doc_key": state.doc_key, "have": have_seq, "received": state.sent_seq or None,
        "sent_at": state.sent_at, "bytes": state.sent_bytes, "receipt": state.receipt,
        # What a client can check against the file it holds: the digest of the bytes sent.
        "sha256": sha256, "hash": sha256[:12],
        "content_hash": bytes(state.sent_hash).hex()[:12] if state.sent_hash else "",
        "age_ms": state.age_ms, "path": state.sent_path, "behind": behind,
        "why": _why_behind(state, row) if behind else "",
        "why_detail": plain_and_technical(state.last_error)[1] if behind and state.last_error else "",
        "dead_letter": state.dead_lettered_at is not None, "state_id": state.pk,
    }


def _why_behind(state: DeliveryState, row: DestinationStatus) -> str:
    destination = row.destination
    if not destination.client.active:
        return f"client switched off: {destination.client.switched_off_reason}"
    if destination.fenced:
        return f"destination fenced: {destination.fence_reason}"
    if not destination.enabled:
        return f"destination disabled: {destination.disabled_reason}"
    if row.status == health.Status.PAUSED:
        return f"paused: {row.paused_reason}"
    plain, technical = plain_and_technical(state.last_error)
    if state.dead_lettered_at:
        return f"dead letter (needs a person): {plain or technical}"
    if state.last_error:
        return f"retrying: {plain or technical}"
    return "sending now"


def freshness_svg(destination: Destination, width: int = 480, height: int = 60) -> str:
    """Change-to-delivered age over the last day: one bar per 30 minutes (the worst age)."""
    since = timezone.now() - timedelta(days=1)
    ages = DeliveryAttempt.objects.filter(destination=destination, ok=True, started_at__gte=since,
                                          age_ms__isnull=False).values_list("started_at", "age_ms")
    buckets = [0] * 48
    for started_at, age_ms in ages:
        index = min(47, int((started_at - since).total_seconds() // 1800))
        buckets[index] = max(buckets[index], age_ms)
    worst = max(buckets) or 1
    bar = width / 48
    bars = "".join(
        f'<rect x="{i * bar:.1f}" y="{height - h:.1f}" width="{bar - 1:.1f}" height="{h:.1f}" '
        f'fill="{"#c0392b" if age > 60_000 else "#e67e22" if age > 10_000 else "#27ae60"}">'
        f"<title>{age / 1000:.1f} s</title></rect>"
        for i, age in enumerate(buckets) if age for h in [max(2.0, height * age / worst)]
    )
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="worst age per half hour, last 24 h (max {worst / 1000:.1f} s)">'
            f'<rect width="{width}" height="{height}" fill="#f8f8f8"/>{bars}</svg>')
