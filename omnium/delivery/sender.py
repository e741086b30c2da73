"""The sender: drains one destination's owed files, one at a time (or a batch at a time to a
transport that takes several in one round trip: the Redis pull cache), under its lease.

For each owed (subscription, file) it reads the file's CURRENT version (so a version that
was overtaken while it waited is never sent), renders the subscription's transform, pushes
it through the destination's transport under the hard deadline, and records the proof in one
statement that only moves `sent_seq` forward. A failure backs off this destination only.
"""

import functools
import hashlib
import itertools
import logging
import time
import uuid
from dataclasses import dataclass
from enum import StrEnum

from django.utils import timezone
from redis.exceptions import RedisError

from omnium import claim_renewal
from omnium.clients import file_names
from omnium.clients.credentials import CredentialError
from omnium.clients.models import Destination
from omnium.clients.shapes import Shape
from omnium.delivery import backoff, deletion, health, kicks, lease, proofs, rendering
from omnium.delivery.kicks import kick
from omnium.delivery.models import NEWER_THAN_FAILED, DeliveryState, DeliverySwitch
from omnium.delivery.transport_cache import transport_for
from omnium.metrics.families import count_send, count_send_failure
from omnium.redis_client import redis_client
from omnium.safe_errors import safe_error_text
from omnium.server_binding import server_binding_cursor
from omnium.transports import TransportError
from omnium.transports.base import FeedFile, Receipt
from omnium.transports.registry import TRANSPORTS

log = logging.getLogger(__name__)

# One drain task sends for at most this long, then the next kick carries on.
DRAIN_BUDGET_S = 20.0


class Outcome(StrEnum):
    """How one destination's drain ended."""

    BUSY = "busy"  # another sender holds the destination's lease
    OFF = "off"  # switched off, deleted, or delivery is off
    IDLE = "idle"  # nothing it may send now (nothing owed, paused, or waiting for a retry)
    DRAINED = "drained"  # sent what was owed (or its time budget ran out: a new kick carries on)
    FAILED = "failed"  # a send failed; the destination backs off
    LOST_LEASE = "lost_lease"  # its lease passed to another sender


@dataclass(frozen=True)
class OwedFile:
    """The next file a destination is owed, with what sending it needs (one query, not five)."""

    state_id: int
    subscription_id: int
    doc_key: str
    shape: Shape
    file_name_template: str
    games_code: str
    version: rendering.CurrentVersion | None  # None: the file no longer exists
    gate: backoff.Gate | None  # the destination must not send now
    failures_before: int
    row_versions: tuple[str, str]  # of the destination's row and its client's (see _destination)


# The shape is the client's, but for the fields the subscription sets itself.
# A back-off holds back only the versions that already failed: a file owed a version newer
# than the one that failed is tried at once (ARCHITECTURE rule 7), so it comes first while the
# destination waits. Dead letters are a record of what failed, never a block: they stay owed.
#
# The file is picked first, then joined: two index walks of `delivery_state_owed_in_order`, each
# stopping at its first row (the second runs only if the first found nothing). Ordering every
# owed row by a computed "waiting" flag instead cost a sort of all of them for each file sent:
# 45 ms per send with 12,900 files owed, as a pull-cache destination is when a Games loads.
#
# Up to `limit` files at once (a transport that pushes several in one round trip): the newer
# versions first in a back-off, then every owed file in order, so the first rows whose gate is
# open are what may be sent now (a file can come twice: the caller keeps its first row).
def _owed_here(branch: int) -> str:
    return f"""
SELECT {branch} AS branch, ds.* FROM delivery_state ds
JOIN clients_subscription s ON s.id = ds.subscription_id AND s.active
WHERE ds.destination_id = %(destination)s AND (ds.wanted_seq > ds.sent_seq OR ds.force_resend)"""


# The limit is written into the statement (one prepared statement per transport's batch
# size): a generic plan does not know a bound LIMIT, and one that guesses it large may sort
# every owed row instead of walking the index to its first rows.
_FIRST = " ORDER BY ds.wanted_at, ds.id LIMIT {limit}"  # delivery_state_owed_in_order's order
NEXT_OWED = """
WITH sender AS (
    SELECT COALESCE(ss.paused, false) AS paused,
           COALESCE(ss.retry_at > clock_timestamp(), false) AS backing_off,
           COALESCE(ss.consecutive_failures, 0) AS failures
    FROM (SELECT 1) AS one LEFT JOIN delivery_senderstate ss ON ss.destination_id = %(destination)s
), picked AS (
    (""" + _owed_here(1) + " AND (SELECT backing_off FROM sender) AND " + NEWER_THAN_FAILED + _FIRST + """)
    UNION ALL
    (""" + _owed_here(2) + _FIRST + """)
    LIMIT {limit}
)
SELECT ds.id, ds.subscription_id, ds.doc_key, COALESCE(NULLIF(s.transform, ''), c.transform), s.file_name_template,
       COALESCE(s.include_version, c.include_version), COALESCE(s.include_result_marks, c.include_result_marks),
       g.code, d.seq, d.content_hash, d.changed_at, d.feed_type, d.filter,
       d.built_at, sender.paused, sender.backing_off AND NOT """ + NEWER_THAN_FAILED + """ AS waiting,
       sender.failures, dst.xmin::text, c.xmin::text
FROM picked ds
CROSS JOIN sender
JOIN clients_subscription s ON s.id = ds.subscription_id
JOIN clients_destination dst ON dst.id = ds.destination_id
JOIN clients_client c ON c.id = dst.client_id
JOIN feeds_feeddefinition fd ON fd.id = s.definition_id
JOIN games_games g ON g.id = fd.games_id
LEFT JOIN feeds_feeddocument d ON d.doc_key = ds.doc_key
ORDER BY ds.branch, ds.wanted_at, ds.id
"""


@functools.cache
def _next_owed_statement(limit: int) -> str:
    return NEXT_OWED.replace("{limit}", str(int(limit)))


def next_owed(destination_id: int) -> OwedFile | None:
    """The file the destination is owed first, or None."""
    owed = next_owed_files(destination_id, 1)
    return owed[0] if owed else None


def next_owed_files(destination_id: int, limit: int) -> list[OwedFile]:
    """The first `limit` files the destination is owed (fewer may come), in the order to send them."""
    with server_binding_cursor() as cursor:  # prepared: its planning cost more than its run
        cursor.execute(_next_owed_statement(limit), {"destination": destination_id})
        rows = cursor.fetchall()
    owed, seen = [], set()
    for row in rows:
        if row[0] not in seen:
            seen.add(row[0])
            owed.append(_owed_file(row))
    return owed


def _owed_file(row) -> OwedFile:
    (state_id, subscription_id, doc_key, transform, template, with_version, with_marks, games_code,
     seq, content_hash, changed_at, feed_type, filter, built_at, paused, waiting, failures, *row_versions) = row
    version = None if seq is None else rendering.CurrentVersion(
        doc_key, seq, bytes(content_hash), changed_at, feed_type, filter, built_at)
    gate = backoff.Gate.PAUSED if paused else backoff.Gate.WAITING if waiting else None
    return OwedFile(state_id, subscription_id, doc_key, Shape(transform, with_version, with_marks), template,
                    games_code, version, gate, failures, tuple(row_versions))


def drain(destination_id: int) -> str:
    """Send everything the destination is owed (for at most DRAIN_BUDGET_S); returns why it
    stopped."""
    started = time.monotonic()

    def acquire_and_drain() -> str:
        claimed_at = time.monotonic()
        token = lease.acquire(destination_id)
        if token is None:
            kicks.arrived(destination_id)
            _look_again_when_the_lease_ends(destination_id)
            return Outcome.BUSY
        return _drain_and_release(destination_id, token, started, claimed_at)

    # A deleted destination's lease cannot be taken (its sender state row's foreign key).
    return deletion.unless_deleted(destination_id, acquire_and_drain, Outcome.OFF)


# The destination and its client, loaded through the ORM only when either row changed since
# this process last loaded them: compiling and loading that query was a quarter of a drain's
# Python time (py-spy, a fan-out to 2,000 destinations). xmin, the id of the transaction that
# wrote a row's current version, changes with every update of the row; NEXT_OWED reads both
# rows' with each owed file (a statement of their own was one round trip in seven of a send),
# so a change made during a drain also applies from its next file on.
_loaded: dict[int, tuple[tuple[str, str], Destination]] = {}


def _destination(destination_id: int, row_versions: tuple[str, str]) -> Destination | None:
    loaded = _loaded.get(destination_id)
    if loaded is not None and loaded[0] == row_versions:
        return loaded[1]
    destination = Destination.objects.select_related("client").filter(pk=destination_id).first()
    if destination is None:
        _loaded.pop(destination_id, None)
    else:
        _loaded[destination_id] = (row_versions, destination)
    return destination


def _look_again_when_the_lease_ends(destination_id: int) -> None:
    """Another sender holds the lease. If it is alive it looks for new work before it lets go;
    if it died, nobody will: a kick for the moment its lease expires (once per lease, not per
    kick that finds it busy) hands the destination over within the claim TTL."""
    left = lease.seconds_left(destination_id)
    try:
        first = redis_client().set(f"omnium:lease-watch:{destination_id}", 1, px=int(left * 1000) + 1, nx=True)
    except RedisError:
        return  # the sweeper re-kicks a destination whose lease expired
    if first:
        kick(destination_id, countdown=left + 0.1)


@dataclass
class HeldLease:
    """The lease a drain holds: its token, its renewal, whether a proof let it go, and
    whether the drain's kick mark is cleared yet (by its first send, else at its end)."""

    token: uuid.UUID
    claim: claim_renewal.HeldClaim
    released: bool = False
    kick_mark_cleared: bool = False


def _drain_and_release(destination_id: int, token, started: float, claimed_at: float) -> str:
    held = HeldLease(token, claim_renewal.hold(f"destination {destination_id}",
                                               lambda: lease.renew(destination_id, token), claimed_at))
    try:
        outcome = _drain_under_lease(destination_id, held, started)
    finally:
        claim_renewal.let_go(held.claim)
        if not held.released:
            lease.release(destination_id, token)
        if not held.kick_mark_cleared:
            kicks.arrived(destination_id)
    if held.released:
        return outcome  # let go by the last proof, which saw nothing else owed (RECORD_PROOF)
    # A kick that arrived while we held the lease returned at once: look again, so that no
    # wake-up is lost between our last look and the release.
    if outcome == Outcome.DRAINED and (owed := next_owed(destination_id)) and owed.gate is None:
        kick(destination_id)
    return outcome


def _drain_under_lease(destination_id: int, held: HeldLease, started: float) -> str:
    sent = 0
    # The gate and the destination's switches are read with every file (or batch), so a pause,
    # a back-off or a switch-off set elsewhere takes effect at once.
    while owed_files := next_owed_files(destination_id, _files_per_push(destination_id)):
        owed = owed_files[0]
        destination = _destination(destination_id, owed.row_versions)
        if destination is None or not destination.can_send() or not DeliverySwitch.is_on():
            return Outcome.OFF
        if owed.gate is not None:
            return Outcome.IDLE
        if time.monotonic() - started > DRAIN_BUDGET_S:
            return Outcome.DRAINED  # hand over to a fresh task (re-kicked by drain), keeping queues fair
        if not held.claim.held():
            return Outcome.LOST_LEASE
        batch = list(itertools.takewhile(lambda file: file.gate is None, owed_files))
        if not send_files(destination, batch, held):
            return Outcome.FAILED
        if held.released:
            return Outcome.DRAINED
        sent += len(batch)
    return Outcome.DRAINED if sent else Outcome.IDLE


def _files_per_push(destination_id: int) -> int:
    """How many owed files to take at once: what the destination's transport takes in one push
    (1 until this process has loaded the destination)."""
    loaded = _loaded.get(destination_id)
    return TRANSPORTS[loaded[1].kind].files_per_push if loaded is not None else 1


def send_one(destination: Destination, owed: OwedFile, held: HeldLease | None = None) -> bool:
    """Push the current version of one owed file; True when its proof is recorded."""
    return send_files(destination, [owed], held)


@dataclass(frozen=True)
class _Ready:
    """An owed file rendered and named, about to be pushed."""

    owed: OwedFile
    rendered: object  # clients.transforms.base.Rendered
    path: str

    def feed_file(self) -> FeedFile:
        version = self.owed.version
        return FeedFile(self.rendered.body, self.path, self.rendered.content_type, version.seq,
                        self.owed.shape.etag(version.content_hash.hex()))


def send_files(destination: Destination, owed: list[OwedFile], held: HeldLease | None = None) -> bool:
    """Push the current version of each owed file (several at once only to a transport that
    takes them in one round trip); True when every proof is recorded. With the drain's lease
    `held`, whether it is still held is asked just before the files become visible at the
    destination (the fence), and the proof lets it go if nothing else is owed."""
    ready = [prepared for file in owed if (prepared := _prepare(file)) is not None]
    if not ready:
        return True
    attempt_ids = proofs.open_attempts(destination.pk, [(r.owed.subscription_id, r.owed.doc_key, r.owed.version.seq)
                                                        for r in ready])
    started = time.monotonic()
    outcomes = _push(destination, ready, held)
    landed = [(r, attempt, receipt) for r, attempt, receipt in zip(ready, attempt_ids, outcomes)
              if isinstance(receipt, Receipt)]
    failed = [(r, attempt, error) for r, attempt, error in zip(ready, attempt_ids, outcomes)
              if not isinstance(error, Receipt)]
    if landed:
        _record_landed(destination, landed, started, held if not failed and len(outcomes) == len(ready) else None,
                       held)
    if failed:
        _record_failures(destination, failed, started)
    _close_unattempted(attempt_ids[len(outcomes):], started)
    if not failed and ready[0].owed.failures_before:
        backoff.recovered(destination)
    return not failed and len(outcomes) == len(ready)


def _prepare(owed: OwedFile) -> _Ready | None:
    """The owed file rendered in its subscription's shape, with its path; None when there is
    nothing to send (the file was removed, or a newer version arrived this instant: the next
    turn sends that)."""
    version = owed.version
    if version is None:
        DeliveryState.objects.filter(pk=owed.state_id).update(force_resend=False, wanted_seq=0)
        return None
    try:
        rendered = rendering.render(version, owed.shape.transform, owed.shape.marks(version.seq))
    except rendering.VersionMoved:
        return None
    path = file_names.render(owed.file_name_template, owed.games_code, version.feed_type, version.filter,
                             rendered.extension)
    return _Ready(owed, rendered, path)


def _push(destination: Destination, ready: list[_Ready], held: HeldLease | None) -> list:
    """Each file's Receipt or error, in order; fewer outcomes than files when the transport
    stopped at a failure."""
    still_ours = held.claim.held if held else None
    try:
        transport = transport_for(destination)
        if len(ready) == 1:
            file = ready[0].feed_file()
            return [transport.send(file.body, file.path, content_type=file.content_type, version=file.version,
                                   etag=file.etag, still_ours=still_ours)]
        return transport.send_many([r.feed_file() for r in ready], still_ours=still_ours)
    except (TransportError, CredentialError) as exc:
        return [exc]


def _record_landed(destination, landed: list, started: float, releasing: HeldLease | None,
                   held: HeldLease | None) -> None:
    """The proofs of the files that landed, the metrics and the destination's status; the
    proof lets the lease of `releasing` go when nothing else is owed."""
    if releasing is not None:
        releasing.claim.may_end = True
    recorded = proofs.record_proofs(destination.pk, [
        proofs.Landed(r.owed.state_id, attempt, r.owed.version.seq, r.owed.version.content_hash,
                      r.owed.version.changed_at, len(r.rendered.body), hashlib.sha256(r.rendered.body).digest(),
                      receipt.text, r.path, proofs.duration_ms(started))
        for r, attempt, receipt in landed], releasing.token if releasing else None)
    if releasing is not None:
        releasing.released = releasing.claim.may_end = recorded.released
    for r, _, _ in landed:
        count_send(destination.kind, destination.client.name, recorded.ages_ms.get(r.owed.state_id))
    # On every success, not only after failures: a healthy destination must not look unknown.
    # A drain's first send also clears its kick mark, in the same round trip.
    clear_kick_mark = held is not None and not held.kick_mark_cleared
    last, _, _ = landed[-1]
    health.publish_sent(destination.pk, health.Status.PAUSED if recorded.paused else health.Status.RUNNING,
                        forget=(kicks.on_its_way_key(destination.pk),) if clear_kick_mark else (),
                        doc_key=last.owed.doc_key, seq=last.owed.version.seq, bytes=len(last.rendered.body),
                        age_ms=recorded.ages_ms.get(last.owed.state_id), files=len(landed))
    if clear_kick_mark:
        held.kick_mark_cleared = True


def _record_failures(destination, failed: list, started: float) -> None:
    """Each failed file's record; the destination backs off once for the push."""
    for n, (r, attempt, error) in enumerate(failed):
        _record_failure(destination, r.owed, attempt, error, started, back_off=n == 0)


def _close_unattempted(attempt_ids: list[int], started: float) -> None:
    """Attempts the transport never got to (it stopped at an earlier failure)."""
    for attempt_id in attempt_ids:
        proofs.finish_attempt(attempt_id, started, ok=False, error_class="NotAttempted", permanent=False,
                              error="not sent: an earlier file of the same push failed")


def _record_failure(destination, owed: OwedFile, attempt_id: int, exc: Exception, started: float,
                    back_off: bool = True) -> None:
    """Log the failed attempt and back the destination off. A permanent-looking error (a 4xx,
    bad credentials, a changed host key) also marks the file's dead letter: a record of what
    failed, replayable, that blocks nothing. Every error is retried: the client may be
    mid-deploy, and its fix must be picked up without a person."""
    permanent = getattr(exc, "permanent", True)
    message = safe_error_text(exc)  # what every record below keeps: no URL path, query or body
    # Read again: a pause may have cut this send. A person stopped it; not the destination's fault.
    cut_by_pause = backoff.gate(destination.pk) == backoff.Gate.PAUSED
    if cut_by_pause:
        message = f"cut by a pause: {message}"
    log.warning("send of %s to destination %s failed (%s): %s", owed.doc_key, destination.pk,
                "permanent" if permanent else "transient", message)
    proofs.finish_attempt(attempt_id, started, ok=False, error_class=type(exc).__name__, error=message,
                          permanent=permanent)
    count_send_failure(destination.kind, exc)
    now = timezone.now()
    marks = {"dead_lettered_at": now} if permanent and not cut_by_pause else {}
    DeliveryState.objects.filter(pk=owed.state_id).update(
        last_error=message, last_attempt_at=now, failed_seq=owed.version.seq, **marks)
    health.record_event("dead_lettered" if marks else "failed", destination.pk, doc_key=owed.doc_key,
                        error=message)
    if back_off and not cut_by_pause:
        backoff.failed(destination, message, retry_after=getattr(exc, "retry_after", None), permanent=permanent)
