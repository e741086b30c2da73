"""What a send leaves in PostgreSQL: its attempt row before, its proof of delivery after.

For one file or for a batch the sender pushed in one round trip, each in one statement: the
attempt rows as the send starts, and the proofs with the destination's success and the
attempts' outcomes as it lands. A proof only moves `sent_seq` forward, and is written only
for a file that landed: the proof of delivery never claims a delivery that did not happen.
"""

import time
import uuid
from dataclasses import dataclass
from datetime import datetime

from celery import current_task
from django.db import connection

from omnium.delivery.models import DeliveryAttempt
from omnium.server_binding import server_binding_cursor

# In SQL rather than through the ORM's save(), a tenth of a drain's Python time.
OPEN_ATTEMPTS = """
INSERT INTO delivery_deliveryattempt (destination_id, subscription_id, doc_key, seq, started_at, receipt,
                                      error_class, error, permanent, is_test, worker)
SELECT %s, t.subscription_id, t.doc_key, t.seq, clock_timestamp(), '', '', '', false, false, %s
FROM unnest(%s::bigint[], %s::text[], %s::bigint[]) AS t(subscription_id, doc_key, seq)
RETURNING id, subscription_id, doc_key"""


def open_attempts(destination_id: int, files: list[tuple[int, str, int]]) -> list[int]:
    """The attempt rows (their ids, in order) of sending these (subscription id, doc_key, seq),
    written before the send without waiting for the disk.

    Every commit waits for the WAL to be flushed, and in a burst senders queued behind the
    builders' megabytes (in a 20 ms sample of pg_stat_activity, this insert was the
    statement most often running after the lease's). Nothing is risked: the proof that
    follows is committed synchronously, which flushes these rows with it; a database crash
    before the proof loses only the rows of attempts whose outcome was never recorded."""
    subscriptions, doc_keys, seqs = (list(column) for column in zip(*files, strict=True))
    # Both statements in one query string: PostgreSQL runs them as one implicit transaction, in
    # one round trip (BEGIN, SET, INSERT and COMMIT were four, and the transaction stayed open
    # between them while the thread waited for the GIL).
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO OFF;" + OPEN_ATTEMPTS,
                       [destination_id, worker_name(), subscriptions, doc_keys, seqs])
        cursor.nextset()  # the INSERT's result, after the SET's
        ids = {(subscription, doc_key): attempt for attempt, subscription, doc_key in cursor.fetchall()}
    return [ids[(subscription, doc_key)] for subscription, doc_key, _ in files]


# The delivery worker's node name, for the drains its strategy runs outside a Celery task
# (delivery.drain_strategy); "" in a process that is not a delivery worker.
_delivery_worker = ""


def set_worker_name(name: str) -> None:
    global _delivery_worker
    _delivery_worker = name


def worker_name() -> str:
    """The node name of the Celery worker running this send ("" outside a worker)."""
    task = current_task
    return (task.request.hostname or "") if task else _delivery_worker


@dataclass(frozen=True)
class Landed:
    """One file the destination confirmed: what its proof records."""

    state_id: int
    attempt_id: int
    seq: int
    content_hash: bytes
    changed_at: datetime
    bytes: int
    bytes_sha256: bytes
    receipt: str
    path: str
    duration_ms: int


@dataclass(frozen=True)
class Recorded:
    ages_ms: dict[int, int | None]  # by state id; None where a newer proof was there already
    paused: bool  # the destination was paused meanwhile
    released: bool  # the lease was let go: nothing else is owed


# The proofs, the destination's success and the attempts' outcomes in one statement, so in one
# commit (every commit waits for the WAL to reach disk: a new version sent to 20 destinations
# at once made 20 more of them); it also reads whether a pause arrived meanwhile, so that the
# status published after it stays true.
#
# And when nothing else is owed here, it lets the lease go (given its token): the statements
# that followed the last send (a look for more, the release, a look again) were a third of a
# fan-out's statements. No wake-up is lost: work committed before this statement began is
# seen here and keeps the lease; the kick of work committed after it finds the lease's row
# locked by this statement, waits for its commit, and then takes the lease. A file whose proof
# found a newer one there, or that is owed again already, keeps the lease too.
RECORD_PROOFS = """
WITH landed AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(seqs)s::bigint[], %(hashes)s::bytea[], %(bytes)s::bigint[],
                         %(bytes_sha256)s::bytea[], %(receipts)s::text[], %(paths)s::text[],
                         %(changed_at)s::timestamptz[], %(attempts)s::bigint[], %(durations)s::int[])
        AS t(id, seq, hash, bytes, bytes_sha256, receipt, path, changed_at, attempt, duration_ms)),
proof AS (
UPDATE delivery_state ds SET
    sent_seq = GREATEST(ds.sent_seq, l.seq), sent_hash = l.hash, sent_bytes = l.bytes,
    sent_bytes_sha256 = l.bytes_sha256, receipt = l.receipt, sent_path = l.path, sent_at = clock_timestamp(),
    age_ms = GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - l.changed_at) * 1000)::int,
    force_resend = false, last_error = '', last_attempt_at = clock_timestamp(),
    failed_seq = 0, dead_lettered_at = NULL
FROM landed l
WHERE ds.id = l.id AND (ds.sent_seq < l.seq OR ds.force_resend)
RETURNING ds.id, ds.age_ms, ds.wanted_seq > ds.sent_seq AS still_owed),
done AS (
SELECT %(token)s::uuid IS NOT NULL
       AND (SELECT count(*) FROM proof) = cardinality(%(ids)s::bigint[])
       AND NOT EXISTS (SELECT 1 FROM proof WHERE still_owed)
       AND NOT EXISTS (SELECT 1 FROM delivery_state ds WHERE ds.destination_id = %(destination)s
                       AND ds.id <> ALL(%(ids)s::bigint[]) AND (ds.wanted_seq > ds.sent_seq OR ds.force_resend))
       AS nothing_owed),
success AS (
UPDATE delivery_senderstate SET last_success_at = clock_timestamp(), consecutive_failures = 0,
    retry_at = NULL, last_error = '',
    lease_token = CASE WHEN (SELECT nothing_owed FROM done) AND lease_token = %(token)s THEN NULL ELSE lease_token END,
    lease_until = CASE WHEN (SELECT nothing_owed FROM done) AND lease_token = %(token)s THEN NULL ELSE lease_until END
WHERE destination_id = %(destination)s
RETURNING paused, lease_token IS NULL AS released),
attempt AS (
UPDATE delivery_deliveryattempt a SET ok = true, duration_ms = l.duration_ms, bytes = l.bytes,
    receipt = l.receipt, age_ms = proof.age_ms
FROM landed l LEFT JOIN proof ON proof.id = l.id
WHERE a.id = l.attempt)
SELECT l.id, proof.age_ms, COALESCE((SELECT paused FROM success), false),
       COALESCE((SELECT released FROM success), false) AND %(token)s::uuid IS NOT NULL
FROM landed l LEFT JOIN proof ON proof.id = l.id
"""


def record_proofs(destination_id: int, landed: list[Landed], lease_token: uuid.UUID | None = None) -> Recorded:
    """Record the proofs (forward only) and the attempts' success; with `lease_token`, let the
    lease go if nothing else is owed."""
    with server_binding_cursor() as cursor:  # prepared
        cursor.execute(RECORD_PROOFS, {
            "destination": destination_id, "token": lease_token,
            "ids": [f.state_id for f in landed], "seqs": [f.seq for f in landed],
            "hashes": [f.content_hash for f in landed], "bytes": [f.bytes for f in landed],
            "bytes_sha256": [f.bytes_sha256 for f in landed], "receipts": [f.receipt for f in landed],
            "paths": [f.path for f in landed], "changed_at": [f.changed_at for f in landed],
            "attempts": [f.attempt_id for f in landed], "durations": [f.duration_ms for f in landed],
        })
        rows = cursor.fetchall()
    return Recorded({row[0]: row[1] for row in rows}, rows[0][2], rows[0][3])


def finish_attempt(attempt_id: int, started: float, **outcome) -> None:
    """Close an attempt with the outcome given (a failure's)."""
    DeliveryAttempt.objects.filter(pk=attempt_id).update(duration_ms=duration_ms(started), **outcome)


def duration_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
