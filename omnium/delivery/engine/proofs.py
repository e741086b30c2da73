"""What a send leaves in PostgreSQL: its attempt row before, its proof of delivery after.

For one file or for a batch the sender pushed in one round trip: the attempt rows opened by
the statement that reads the files to send (OPENED_WITH_THE_READ), and the proofs with the
destination's success and the attempts' outcomes as they land, in one statement. A proof only
moves `sent_seq` forward, and is written only for a file that landed: the proof of delivery
never claims a delivery that did not happen.
"""

import functools
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from celery import current_task

from omnium.database.server_binding import server_binding_cursor
from omnium.delivery.engine import lease
from omnium.delivery.models import DeliveryAttempt

# (name, PostgreSQL type) of each column of rows given as parameters (see _with_rows).
Columns = tuple[tuple[str, str], ...]


@functools.cache
def _with_rows(template: str, columns: Columns, one_row: bool) -> str:
    """`template` with its {rows} replaced by a FROM item of rows given as parameters, named as
    their columns: for one row a value each, else a list each (parallel arrays).

    Binding a list cost psycopg about 10 µs (it looks into the list for its type, every time)
    against 1 µs for a value: for the ten columns of a proof, 2 % of a delivery worker's CPU
    in a fan-out, where every push is of one file."""
    if one_row:
        arrays = [f"ARRAY[%({name})s::{kind}]" for name, kind in columns]
    else:
        arrays = [f"%({name})s::{kind}[]" for name, kind in columns]
    return template.replace("{rows}", f"unnest({', '.join(arrays)}) AS t({', '.join(name for name, _ in columns)})")


def _execute(cursor, template: str, columns: Columns, rows: list[tuple], **parameters) -> None:
    """Run `template` with `rows` in its {rows} (prepared: a statement for one row, one for several)."""
    one_row = len(rows) == 1
    if one_row:
        values = dict(zip((name for name, _ in columns), rows[0], strict=True))
    else:
        values = {name: list(column) for (name, _), column in zip(columns, zip(*rows, strict=True), strict=True)}
    cursor.execute(_with_rows(template, columns, one_row), {**parameters, **values})


# The attempt rows, opened by the statement that reads the files to send (delivery.engine.owed_files):
# a common table expression over its `owed` rows, for those whose gate is open and whose file
# exists (the files the sender pushes next); a file can come twice in `owed` (see
# owed_files.PICK): one attempt each. In SQL rather than through the ORM's save() (a tenth of
# a drain's Python time), and in the read rather than a statement of its own: PostgreSQL spent
# about 0.15 ms running the insert apart, and as much again on its own round trip and commit
# (log_statement_stats, bench/send_cpu.py).
#
# Where the statement takes no lease, its commit does not wait for the disk
# (WITHOUT_WAITING: set_config, local to the statement's transaction, so the statement stays
# one and is prepared). Every commit waits for the WAL to be flushed, and in a burst senders
# queued behind the builders' megabytes (in a 20 ms sample of pg_stat_activity, the attempt
# insert was the statement most often running after the lease's). Nothing is risked: the
# proof that follows is committed synchronously, which flushes these rows with it; a database
# crash before the proof loses only the rows of attempts whose outcome was never recorded.
# A lease's commit waits for the disk (see lease).
OPENED_WITH_THE_READ = """
attempt AS (
INSERT INTO delivery_deliveryattempt (destination_id, subscription_id, doc_key, seq, started_at, receipt,
                                      error_class, error, permanent, is_test, worker)
SELECT DISTINCT ON (owed.id) %(destination)s, owed.subscription_id, owed.doc_key, owed.seq, clock_timestamp(),
       '', '', '', false, false, %(worker)s
FROM owed {without_waiting}
WHERE owed.seq IS NOT NULL AND NOT owed.paused AND NOT owed.waiting
RETURNING id, subscription_id, doc_key)"""
WITHOUT_WAITING = "CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS without_waiting_for_the_disk"


# The delivery worker's node name, for the drains its consumer step hands to the pool
# (delivery.worker.kick_consumer); "" in a process that is not a delivery worker.
_delivery_worker = ""


def forget_attempts(attempt_ids) -> None:
    """Delete attempt rows opened for files that were not pushed after all (the drain stopped
    at a switch, its time budget or its lease, or the file changed as it was rendered)."""
    ids = [attempt_id for attempt_id in attempt_ids if attempt_id is not None]
    if ids:
        DeliveryAttempt.objects.filter(pk__in=ids, ok__isnull=True).delete()


def set_worker_name(name: str) -> None:
    global _delivery_worker
    _delivery_worker = name


def worker_name() -> str:
    """The node name of the Celery worker running this send ("" outside a worker)."""
    task = current_task
    return (task.request.hostname or "") if task else _delivery_worker


class Landed(NamedTuple):
    """One file the destination confirmed: what its proof records (a row of LANDED)."""

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
    released: bool  # the lease was let go: nothing else is owed


# The proofs, the destination's success and the attempts' outcomes in one statement, so in one
# commit (every commit waits for the WAL to reach disk: a new version sent to 20 destinations
# at once made 20 more of them).
#
# And when nothing else is owed here, it lets the lease go (given its token): the statements
# that followed the last send (a look for more, the release, a look again) were a third of a
# fan-out's statements. No wake-up is lost: work committed before this statement began is
# seen here and keeps the lease; the kick of work committed after it finds the lease's row
# locked by this statement, waits for its commit, and then takes the lease. A file whose proof
# found a newer one there, or that is owed again already, keeps the lease too.
LANDED = (("id", "bigint"), ("attempt", "bigint"), ("seq", "bigint"), ("hash", "bytea"),
          ("changed_at", "timestamptz"), ("bytes", "bigint"), ("bytes_sha256", "bytea"), ("receipt", "text"),
          ("path", "text"), ("duration_ms", "int"))
RECORD_PROOFS = """
WITH landed AS (SELECT * FROM {rows}),
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
       AND (SELECT count(*) FROM proof) = (SELECT count(*) FROM landed)
       AND NOT EXISTS (SELECT 1 FROM proof WHERE still_owed)
       AND NOT EXISTS (SELECT 1 FROM delivery_state ds WHERE ds.destination_id = %(destination)s
                       AND ds.id NOT IN (SELECT id FROM landed) AND (ds.wanted_seq > ds.sent_seq OR ds.force_resend))
       AS nothing_owed),
success AS (
UPDATE delivery_senderstate SET last_success_at = clock_timestamp(), consecutive_failures = 0,
    failing_since = NULL, retry_at = NULL, last_error = '',
    """ + lease.released_if("SELECT nothing_owed FROM done") + """
WHERE destination_id = %(destination)s
RETURNING lease_token IS NULL AS released),
attempt AS (
UPDATE delivery_deliveryattempt a SET ok = true, duration_ms = l.duration_ms, bytes = l.bytes,
    receipt = l.receipt, age_ms = proof.age_ms
FROM landed l LEFT JOIN proof ON proof.id = l.id
WHERE a.id = l.attempt)
SELECT l.id, proof.age_ms,
       COALESCE((SELECT released FROM success), false) AND %(token)s::uuid IS NOT NULL
FROM landed l LEFT JOIN proof ON proof.id = l.id
"""


def record_proofs(destination_id: int, landed: list[Landed], lease_token: uuid.UUID | None = None) -> Recorded:
    """Record the proofs (forward only) and the attempts' success; with `lease_token`, let the
    lease go if nothing else is owed."""
    with server_binding_cursor() as cursor:  # prepared
        _execute(cursor, RECORD_PROOFS, LANDED, landed, destination=destination_id, token=lease_token)
        rows = cursor.fetchall()
    return Recorded({row[0]: row[1] for row in rows}, rows[0][2])


def finish_attempt(attempt_id: int, started: float, **outcome) -> None:
    """Close an attempt with the outcome given (a failure's)."""
    DeliveryAttempt.objects.filter(pk=attempt_id).update(duration_ms=duration_ms(started), **outcome)


def duration_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
