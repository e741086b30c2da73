"""What a destination is owed next: its first owed files, with everything sending them needs.

Read in one statement per file (or batch) sent, which also opens the attempt rows of the
files it returns for sending (delivery.engine.proofs). A drain's first read is also the statement
that takes the destination's lease (`take_lease`): a drain of one file (a fan-out's case, one
medal table to each of 5,000 destinations) then runs two statements, this one and its proof.
"""

import functools
import uuid
from dataclasses import dataclass

from omnium.clients.shapes import Shape
from omnium.database.server_binding import server_binding_cursor
from omnium.delivery.engine import backoff, lease, proofs, rendering
from omnium.delivery.models import NEWER_THAN_FAILED


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
    row_versions: tuple[str, str]  # of the destination's row and its client's (see sender._destination)
    # The attempt row opened as the file was read for sending; None when read without one (a
    # look at what is owed, or a file whose gate is closed).
    attempt_id: int | None = None


@dataclass(frozen=True)
class TakenLease:
    """A lease just taken, and the files owed first when it was taken."""

    token: uuid.UUID
    first_files: list[OwedFile]


# What the pick needs of the destination's sender state (no row yet: a destination never sent).
SENDER_STATE = """
sender AS (
    SELECT COALESCE(ss.paused, false) AS paused,
           COALESCE(ss.retry_at > clock_timestamp(), false) AS backing_off,
           COALESCE(ss.consecutive_failures, 0) AS failures
    FROM (SELECT 1) AS one LEFT JOIN delivery_senderstate ss ON ss.destination_id = %(destination)s
)"""

# The same, from the row the lease's upsert returns: no row when another sender holds it.
SENDER_STATE_UNDER_NEW_LEASE = """
lease AS (""" + lease.ACQUIRE + """RETURNING lease_token, paused, retry_at, consecutive_failures),
sender AS (
    SELECT paused, COALESCE(retry_at > clock_timestamp(), false) AS backing_off, consecutive_failures AS failures
    FROM lease
)"""


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
PICK = """
picked AS (
    (""" + _owed_here(1) + " AND (SELECT backing_off FROM sender) AND " + NEWER_THAN_FAILED + _FIRST + """)
    UNION ALL
    (""" + _owed_here(2) + _FIRST + """)
    LIMIT {limit}
),
owed AS (
SELECT ds.id, ds.subscription_id, ds.doc_key, COALESCE(NULLIF(s.transform, ''), c.transform), s.file_name_template,
       COALESCE(s.include_version, c.include_version), COALESCE(s.include_result_marks, c.include_result_marks),
       g.code, d.seq, d.content_hash, d.changed_at, d.feed_type, d.filter,
       d.built_at, sender.paused, sender.backing_off AND NOT """ + NEWER_THAN_FAILED + """ AS waiting,
       sender.failures, dst.xmin::text, c.xmin::text, ds.branch, ds.wanted_at AS wanted_at
FROM picked ds
CROSS JOIN sender
JOIN clients_subscription s ON s.id = ds.subscription_id
JOIN clients_destination dst ON dst.id = ds.destination_id
JOIN clients_client c ON c.id = dst.client_id
JOIN feeds_feeddefinition fd ON fd.id = s.definition_id
JOIN games_games g ON g.id = fd.games_id
LEFT JOIN feeds_feeddocument d ON d.doc_key = ds.doc_key
)"""
_ORDER = " ORDER BY owed.branch, owed.wanted_at, owed.id"
_COLUMNS = 19  # of an owed row, before its order keys (and its attempt's id, last, where one is opened)
_WITH_ATTEMPT = " LEFT JOIN attempt ON (attempt.subscription_id, attempt.doc_key) = (owed.subscription_id, owed.doc_key)"


def _opening_attempts(durable: bool) -> str:
    return "," + proofs.OPENED_WITH_THE_READ.replace("{without_waiting}", "" if durable else proofs.WITHOUT_WAITING)


# A look at what is owed: no attempt opened.
NEXT_OWED = "WITH " + SENDER_STATE + "," + PICK + " SELECT owed.* FROM owed" + _ORDER

# The files to send next, their attempts opened.
NEXT_TO_SEND = ("WITH " + SENDER_STATE + "," + PICK + _opening_attempts(durable=False)
                + " SELECT owed.*, attempt.id FROM owed" + _WITH_ATTEMPT + _ORDER)

# One row per owed file, each with the new lease's token and its attempt opened; one row of
# NULLs but the token when nothing is owed; one row of NULLs when another sender holds the
# lease. Its commit waits for the disk, as every lease's does (see lease).
TAKE_LEASE = ("WITH " + SENDER_STATE_UNDER_NEW_LEASE + "," + PICK + _opening_attempts(durable=True)
              + " SELECT (SELECT lease_token FROM lease), owed.*, attempt.id FROM (SELECT 1) AS one"
              + " LEFT JOIN owed ON true" + _WITH_ATTEMPT + _ORDER)


@functools.cache
def _with_limit(statement: str, limit: int) -> str:
    return statement.replace("{limit}", str(int(limit)))


def next_owed(destination_id: int) -> OwedFile | None:
    """The file the destination is owed first, or None."""
    owed = next_owed_files(destination_id, 1)
    return owed[0] if owed else None


def next_owed_files(destination_id: int, limit: int) -> list[OwedFile]:
    """The first `limit` files the destination is owed (fewer may come), in the order to send them."""
    with server_binding_cursor() as cursor:  # prepared: its planning cost more than its run
        cursor.execute(_with_limit(NEXT_OWED, limit), {"destination": destination_id})
        return _owed_files(cursor.fetchall())


def next_to_send(destination_id: int, limit: int) -> list[OwedFile]:
    """As `next_owed_files`, with an attempt opened for each file whose gate is open: the
    caller sends those files, or forgets their attempts (proofs.forget_attempts)."""
    with server_binding_cursor() as cursor:  # prepared
        cursor.execute(_with_limit(NEXT_TO_SEND, limit), {"destination": destination_id, "worker": proofs.worker_name()})
        return _owed_files(cursor.fetchall(), with_attempts=True)


def take_lease(destination_id: int, limit: int) -> TakenLease | None:
    """Take the destination's lease and read its first `limit` owed files, their attempts
    opened as `next_to_send` opens them, in one statement; None if another sender holds the lease."""
    parameters = lease.acquiring(destination_id)
    with server_binding_cursor() as cursor:  # prepared: run for every drain
        cursor.execute(_with_limit(TAKE_LEASE, limit), parameters | {"worker": proofs.worker_name()})
        rows = cursor.fetchall()
    if rows[0][0] is None:
        return None
    return TakenLease(parameters["token"], _owed_files([row[1:] for row in rows if row[1] is not None], with_attempts=True))


def _owed_files(rows, with_attempts: bool = False) -> list[OwedFile]:
    owed, seen = [], set()
    for row in rows:
        if row[0] not in seen:
            seen.add(row[0])
            owed.append(_owed_file(row[:_COLUMNS], row[-1] if with_attempts else None))
    return owed


def _owed_file(row, attempt_id: int | None) -> OwedFile:
    (state_id, subscription_id, doc_key, transform, template, with_version, with_marks, games_code,
     seq, content_hash, changed_at, feed_type, filter, built_at, paused, waiting, failures, *row_versions) = row
    version = None if seq is None else rendering.CurrentVersion(
        doc_key, seq, bytes(content_hash), changed_at, feed_type, filter, built_at)
    gate = backoff.Gate.PAUSED if paused else backoff.Gate.WAITING if waiting else None
    return OwedFile(state_id, subscription_id, doc_key, Shape(transform, with_version, with_marks), template,
                    games_code, version, gate, failures, tuple(row_versions), attempt_id)
