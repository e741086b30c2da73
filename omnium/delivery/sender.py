"""The sender: drains one destination's owed files, one at a time, under its lease.

For each owed (subscription, file) it reads the file's CURRENT version (so a version that
was overtaken while it waited is never sent), renders the subscription's transform, pushes
it through the destination's transport under the hard deadline, and records the proof in one
statement that only moves `sent_seq` forward. A failure backs off this destination only.
"""

import hashlib
import logging
import time
import uuid
from dataclasses import dataclass
from enum import StrEnum

from celery import current_task
from django.db import connection
from django.utils import timezone
from redis.exceptions import RedisError

from omnium import claim_renewal
from omnium.clients import file_names
from omnium.clients.credentials import CredentialError
from omnium.clients.models import Destination
from omnium.clients.shapes import Shape
from omnium.delivery import backoff, deletion, health, kicks, lease, rendering
from omnium.delivery.kicks import kick
from omnium.delivery.models import NEWER_THAN_FAILED, DeliveryAttempt, DeliveryState, DeliverySwitch
from omnium.delivery.transport_cache import transport_for
from omnium.metrics.families import count_send, count_send_failure
from omnium.redis_client import redis_client
from omnium.safe_errors import safe_error_text
from omnium.server_binding import server_binding_cursor
from omnium.transports import TransportError

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
_OWED_HERE = """
SELECT ds.* FROM delivery_state ds JOIN clients_subscription s ON s.id = ds.subscription_id AND s.active
WHERE ds.destination_id = %(destination)s AND (ds.wanted_seq > ds.sent_seq OR ds.force_resend)"""
_FIRST = " ORDER BY ds.wanted_at, ds.id LIMIT 1"  # delivery_state_owed_in_order's order
NEXT_OWED = """
WITH sender AS (
    SELECT COALESCE(ss.paused, false) AS paused,
           COALESCE(ss.retry_at > clock_timestamp(), false) AS backing_off,
           COALESCE(ss.consecutive_failures, 0) AS failures
    FROM (SELECT 1) AS one LEFT JOIN delivery_senderstate ss ON ss.destination_id = %(destination)s
), picked AS (
    (""" + _OWED_HERE + " AND (SELECT backing_off FROM sender) AND " + NEWER_THAN_FAILED + _FIRST + """)
    UNION ALL
    (""" + _OWED_HERE + _FIRST + """)
    LIMIT 1
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
"""


def next_owed(destination_id: int) -> OwedFile | None:
    with server_binding_cursor() as cursor:  # prepared: its planning cost more than its run
        cursor.execute(NEXT_OWED, {"destination": destination_id})
        row = cursor.fetchone()
    if row is None:
        return None
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
    # The gate and the destination's switches are read with every file, so a pause, a back-off
    # or a switch-off set elsewhere takes effect at once.
    while (owed := next_owed(destination_id)) is not None:
        destination = _destination(destination_id, owed.row_versions)
        if destination is None or not destination.can_send() or not DeliverySwitch.is_on():
            return Outcome.OFF
        if owed.gate is not None:
            return Outcome.IDLE
        if time.monotonic() - started > DRAIN_BUDGET_S:
            return Outcome.DRAINED  # hand over to a fresh task (re-kicked by drain), keeping queues fair
        if not held.claim.held():
            return Outcome.LOST_LEASE
        if not send_one(destination, owed, held):
            return Outcome.FAILED
        if held.released:
            return Outcome.DRAINED
        sent += 1
    return Outcome.DRAINED if sent else Outcome.IDLE


def send_one(destination: Destination, owed: OwedFile, held: HeldLease | None = None) -> bool:
    """Push the current version of one owed file; True when its proof is recorded. With the
    drain's lease `held`, whether it is still held is asked just before the send becomes
    visible at the destination (the fence), and the proof lets it go if nothing else is owed."""
    version = owed.version
    if version is None:  # the file was removed; nothing to send
        DeliveryState.objects.filter(pk=owed.state_id).update(force_resend=False, wanted_seq=0)
        return True
    try:
        rendered = rendering.render(version, owed.shape.transform, owed.shape.marks(version.seq))
    except rendering.VersionMoved:
        return True  # a newer version arrived this instant; the next turn sends it
    path = file_names.render(owed.file_name_template, owed.games_code, version.feed_type, version.filter,
                             rendered.extension)
    attempt_id = _open_attempt(destination, owed, version.seq)
    started = time.monotonic()
    try:
        transport = transport_for(destination)
        receipt = transport.send(rendered.body, path, content_type=rendered.content_type,
                                 version=version.seq, etag=owed.shape.etag(version.content_hash.hex()),
                                 still_ours=held.claim.held if held else None)
    except (TransportError, CredentialError) as exc:
        _record_failure(destination, owed, attempt_id, exc, started)
        return False
    if held is not None:
        held.claim.may_end = True
    age_ms, paused, released = _record_proof(destination, owed, version, rendered, receipt, path, attempt_id, started,
                                             held.token if held else None)
    if held is not None:
        held.released = held.claim.may_end = released
    count_send(destination.kind, destination.client.name, age_ms)
    # On every success, not only after failures: a healthy destination must not look unknown.
    # A drain's first send also clears its kick mark, in the same round trip.
    clear_kick_mark = held is not None and not held.kick_mark_cleared
    health.publish_sent(destination.pk, health.Status.PAUSED if paused else health.Status.RUNNING,
                        forget=(kicks.on_its_way_key(destination.pk),) if clear_kick_mark else (),
                        doc_key=owed.doc_key, seq=version.seq, bytes=len(rendered.body), age_ms=age_ms)
    if clear_kick_mark:
        held.kick_mark_cleared = True
    if owed.failures_before:
        backoff.recovered(destination)
    return True


# In SQL rather than through the ORM's save(), a tenth of a drain's Python time.
OPEN_ATTEMPT = """
INSERT INTO delivery_deliveryattempt (destination_id, subscription_id, doc_key, seq, started_at, receipt,
                                      error_class, error, permanent, is_test, worker)
VALUES (%s, %s, %s, %s, clock_timestamp(), '', '', '', false, false, %s) RETURNING id"""


def _open_attempt(destination: Destination, owed: OwedFile, seq: int) -> int:
    """The attempt's log row (its id), written before the send without waiting for the disk.

    Every commit waits for the WAL to be flushed, and in a burst senders queued behind the
    builders' megabytes (in a 20 ms sample of pg_stat_activity, this insert was the
    statement most often running after the lease's). Nothing is risked: the proof that
    follows is committed synchronously, which flushes this row with it; a database crash
    before the proof loses only the row of an attempt whose outcome was never recorded."""
    # Both statements in one query string: PostgreSQL runs them as one implicit transaction, in
    # one round trip (BEGIN, SET, INSERT and COMMIT were four, and the transaction stayed open
    # between them while the thread waited for the GIL).
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF;" + OPEN_ATTEMPT,
                       [destination.pk, owed.subscription_id, owed.doc_key, seq, _worker_name()])
        cursor.nextset()  # the INSERT's result, after the SET's
        return cursor.fetchone()[0]


def _worker_name() -> str:
    """The node name of the Celery worker running this send ("" outside a task)."""
    task = current_task
    return (task.request.hostname or "") if task else ""


# The proof, the destination's success and the attempt's outcome in one statement, so in one
# commit (every commit waits for the WAL to reach disk: a new version sent to 20 destinations
# at once made 20 more of them); it also reads whether a pause arrived meanwhile, so that the
# status published after it stays true.
#
# And when nothing else is owed here, it lets the lease go (given its token): the statements
# that followed the last send (a look for more, the release, a look again) were a third of a
# fan-out's statements. No wake-up is lost: work committed before this statement began is
# seen here and keeps the lease; the kick of work committed after it finds the lease's row
# locked by this statement, waits for its commit, and then takes the lease.
RECORD_PROOF = """
WITH proof AS (
UPDATE delivery_state SET
    sent_seq = GREATEST(sent_seq, %(seq)s), sent_hash = %(hash)s, sent_bytes = %(bytes)s,
    sent_bytes_sha256 = %(bytes_sha256)s,
    receipt = %(receipt)s, sent_path = %(path)s, sent_at = clock_timestamp(),
    age_ms = GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - %(changed_at)s) * 1000)::int,
    force_resend = false, last_error = '', last_attempt_at = clock_timestamp(),
    failed_seq = 0, dead_lettered_at = NULL
WHERE id = %(id)s AND (sent_seq < %(seq)s OR force_resend)
RETURNING age_ms, wanted_seq > sent_seq AS still_owed),
done AS (
SELECT %(token)s::uuid IS NOT NULL AND NOT COALESCE((SELECT still_owed FROM proof), true)
       AND NOT EXISTS (SELECT 1 FROM delivery_state ds WHERE ds.destination_id = %(destination)s
                       AND ds.id <> %(id)s AND (ds.wanted_seq > ds.sent_seq OR ds.force_resend)) AS nothing_owed),
success AS (
UPDATE delivery_senderstate SET last_success_at = clock_timestamp(), consecutive_failures = 0,
    retry_at = NULL, last_error = '',
    lease_token = CASE WHEN (SELECT nothing_owed FROM done) AND lease_token = %(token)s THEN NULL ELSE lease_token END,
    lease_until = CASE WHEN (SELECT nothing_owed FROM done) AND lease_token = %(token)s THEN NULL ELSE lease_until END
WHERE destination_id = %(destination)s
RETURNING paused, lease_token IS NULL AS released),
attempt AS (
UPDATE delivery_deliveryattempt SET ok = true, duration_ms = %(duration_ms)s, bytes = %(bytes)s,
    receipt = %(receipt)s, age_ms = (SELECT age_ms FROM proof)
WHERE id = %(attempt)s)
SELECT (SELECT age_ms FROM proof), COALESCE((SELECT paused FROM success), false),
       COALESCE((SELECT released FROM success), false) AND %(token)s::uuid IS NOT NULL
"""


def _record_proof(destination, owed: OwedFile, document, rendered, receipt, path: str, attempt_id: int,
                  started: float, lease_token: uuid.UUID | None = None) -> tuple[int | None, bool, bool]:
    """Record the proof (forward only) and the attempt's success; returns the file's age at
    the send (None if a newer proof was there already), whether the destination is paused
    now, and whether the lease of `lease_token` was let go (nothing else owed)."""
    with server_binding_cursor() as cursor:  # prepared
        cursor.execute(RECORD_PROOF, {
            "id": owed.state_id, "destination": destination.pk, "seq": document.seq, "hash": document.content_hash,
            "bytes": len(rendered.body), "bytes_sha256": hashlib.sha256(rendered.body).digest(),
            "receipt": receipt.text, "path": path, "changed_at": document.changed_at,
            "attempt": attempt_id, "duration_ms": _duration_ms(started), "token": lease_token,
        })
        return cursor.fetchone()


def _record_failure(destination, owed: OwedFile, attempt_id: int, exc: Exception, started: float) -> None:
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
    _finish_attempt(attempt_id, started, ok=False, error_class=type(exc).__name__, error=message, permanent=permanent)
    count_send_failure(destination.kind, exc)
    now = timezone.now()
    marks = {"dead_lettered_at": now} if permanent and not cut_by_pause else {}
    DeliveryState.objects.filter(pk=owed.state_id).update(
        last_error=message, last_attempt_at=now, failed_seq=owed.version.seq, **marks)
    health.record_event("dead_lettered" if marks else "failed", destination.pk, doc_key=owed.doc_key,
                        error=message)
    if not cut_by_pause:
        backoff.failed(destination, message, retry_after=getattr(exc, "retry_after", None), permanent=permanent)


def _finish_attempt(attempt_id: int, started: float, **outcome) -> None:
    DeliveryAttempt.objects.filter(pk=attempt_id).update(duration_ms=_duration_ms(started), **outcome)


def _duration_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
