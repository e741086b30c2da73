"""What the status screens show, read from PostgreSQL (the record) and Redis (live health).

Per client, the answer to the question a client asks on the phone: for each file it should
get, the version we have, the version it last received, when, its size, hash, receipt and
age, and if it is behind, why.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, F, Q
from django.utils import timezone

from omnium.clients.models import Client, Destination
from omnium.delivery import dead_mans_switch, health
from omnium.delivery.models import DeliveryAttempt, DeliveryState, SenderState
from omnium.feeds.models import FeedDocument


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
    files: list = field(default_factory=list)
    freshness_svg: str = ""


def _state_of(destination: Destination, sender: SenderState | None) -> str:
    if not destination.can_send():
        return "off"
    if sender is None:
        return health.Status.RUNNING
    return health.status_of(sender.paused, sender.consecutive_failures, destination.fast_retries)


def destination_statuses(destinations) -> list[DestinationStatus]:
    owed = Q(states__wanted_seq__gt=F("states__sent_seq"), states__dead_lettered_at__isnull=True)
    annotated = destinations.select_related("client").annotate(
        owed_total=Count("states", filter=owed),
        dead_total=Count("states", filter=Q(states__dead_lettered_at__isnull=False)),
    )
    senders = {s.pk: s for s in SenderState.objects.filter(pk__in=[d.pk for d in annotated])}
    rows = []
    for destination in annotated:
        sender = senders.get(destination.pk)
        state = _state_of(destination, sender)
        rows.append(DestinationStatus(
            destination=destination, status=state,
            red=state in (health.Status.FAILING, "off") or destination.dead_total > 0,
            files_owed=destination.owed_total, dead_letters=destination.dead_total,
            failures=sender.consecutive_failures if sender else 0,
            last_success_at=sender.last_success_at if sender else None,
            last_error=sender.last_error if sender else "",
            paused_reason=sender.paused_reason if sender else "",
            stalled=health.read(destination.pk).get("stalled"),
        ))
    return sorted(rows, key=lambda r: (not r.red, r.destination.client.name, r.destination.name))


def overview() -> dict:
    clients = Client.objects.order_by("active", "name")
    return {
        "lanes_without_a_worker": dead_mans_switch.silent_lanes_for_screens(),
        "switched_off": [c for c in clients if not c.active],
        "destinations": destination_statuses(Destination.objects.all()),
    }


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
    return {
        "doc_key": state.doc_key, "have": have_seq, "received": state.sent_seq or None,
        "sent_at": state.sent_at, "bytes": state.sent_bytes, "receipt": state.receipt,
        # What a client can check against the file it holds: the digest of the bytes sent.
        "hash": bytes(state.sent_bytes_sha256).hex()[:12] if state.sent_bytes_sha256 else "",
        "content_hash": bytes(state.sent_hash).hex()[:12] if state.sent_hash else "",
        "age_ms": state.age_ms, "path": state.sent_path, "behind": behind,
        "why": _why_behind(state, row) if behind else "",
        "dead_letter": state.dead_lettered_at is not None, "state_id": state.pk,
    }


def _why_behind(state: DeliveryState, row: DestinationStatus) -> str:
    destination = row.destination
    if not destination.client.active:
        return f"client switched off: {destination.client.switched_off_reason}"
    if destination.fenced or not destination.enabled:
        return f"destination {'fenced: ' + destination.fence_reason if destination.fenced else 'disabled'}"
    if row.status == health.Status.PAUSED:
        return f"paused: {row.paused_reason}"
    if state.dead_lettered_at:
        return f"dead letter (needs a person): {state.last_error}"
    if state.last_error:
        return f"retrying: {state.last_error}"
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
