"""Per-file debounce, kept in PostgreSQL so that no worker's death loses a pending build.

Leading edge (BUILD_LEADING_EDGE): the first change to a quiet file is due at once. Quiet
means no pending change and no version of the file within the last BUILD_QUIET_S. Changes
noted before that build is claimed ride along in it; a change noted while it runs keeps the
row (its generation moved), so it is built afterwards, debounced like any follower.

Every other change is debounced: the file is due once its changes have been quiet for
BUILD_QUIET_S, but never later than BUILD_MAX_WAIT_S after its first pending change, so a
steady stream of changes cannot starve it. All times are the database's clock, shared by
every worker host.

A file never built is owed its first build (`note_first_builds`): due at once, nothing to
debounce. Live files are claimed most urgent first; bulk files first come, first served.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import connection

from omnium.conf import omnium_setting
from omnium.database import claim_renewal
from omnium.routing import BULK, LIVE

# A version within the quiet period is what keeps a burst to one extra version per file: the
# burst's second change finds the leading build's version (or its pending row) and waits.
# A build that changed nothing leaves no version and pushed nothing, so it does not count.
# A row is a leading edge while it is due at its first change (a debounced row is due at
# least BUILD_QUIET_S later); a change folded into it before its claim keeps it due at once.
NOTE_CHANGES = """
INSERT INTO feeds_pendingbuild AS p
    (doc_key, lane, first_change_at, last_change_at, due_at, generation)
SELECT key, %(lane)s, %(at)s, %(at)s,
       CASE WHEN %(leading_edge)s AND NOT EXISTS (
                SELECT 1 FROM feeds_feeddocument d
                WHERE d.doc_key = key AND d.built_at > %(at)s - %(quiet)s * interval '1 second')
            THEN %(at)s
            ELSE %(at)s + %(quiet)s * interval '1 second' END,
       1
FROM unnest(%(keys)s::text[]) AS key
ON CONFLICT (doc_key) DO UPDATE SET
    first_change_at = LEAST(p.first_change_at, EXCLUDED.first_change_at),
    last_change_at = GREATEST(p.last_change_at, EXCLUDED.last_change_at),
    due_at = CASE WHEN %(leading_edge)s AND p.due_at <= p.first_change_at
        THEN LEAST(p.due_at, EXCLUDED.first_change_at)
        ELSE LEAST(
            LEAST(p.first_change_at, EXCLUDED.first_change_at) + %(max_wait)s * interval '1 second',
            GREATEST(p.last_change_at, EXCLUDED.last_change_at) + %(quiet)s * interval '1 second') END,
    generation = p.generation + 1,
    lane = CASE WHEN EXCLUDED.lane = %(live)s THEN EXCLUDED.lane ELSE p.lane END
RETURNING due_at
"""


def note_changes(doc_keys, changed_at: datetime, lane: str) -> list[datetime]:
    """Fold a change made at `changed_at` into the files' pending builds; returns their due times."""
    if not doc_keys:
        return []
    with connection.cursor() as cursor:
        cursor.execute(NOTE_CHANGES, {
            "keys": sorted(doc_keys), "at": changed_at, "lane": lane, "live": LIVE,
            "quiet": omnium_setting("BUILD_QUIET_S"), "max_wait": omnium_setting("BUILD_MAX_WAIT_S"),
            "leading_edge": omnium_setting("BUILD_LEADING_EDGE"),
        })
        return [row[0] for row in cursor.fetchall()]


# A file never built is owed its first build, at once and in its lane's turn (a new Games'
# pull files: some 16,700 at Asian Games scale). A file already built or already pending is
# left as it is: a first build has nothing to debounce, and a caller may note the same files
# again and again (the pull cache's repair, every minute) without delaying their builds.
NOTE_FIRST_BUILDS = """
INSERT INTO feeds_pendingbuild (doc_key, lane, first_change_at, last_change_at, due_at, generation)
SELECT key, %(lane)s, clock_timestamp(), clock_timestamp(), clock_timestamp(), 1
FROM unnest(%(keys)s::text[]) AS key
WHERE NOT EXISTS (SELECT 1 FROM feeds_feeddocument d WHERE d.doc_key = key)
ON CONFLICT (doc_key) DO NOTHING
"""


def note_first_builds(doc_keys, lane: str) -> int:
    """Owe a first build to each of these files that has never been built; returns how many
    were newly noted."""
    with connection.cursor() as cursor:
        cursor.execute(NOTE_FIRST_BUILDS, {"keys": list(doc_keys), "lane": lane})
        return cursor.rowcount


@dataclass(frozen=True)
class Claim:
    doc_key: str
    token: uuid.UUID
    generation: int
    claimed_at: datetime
    failed_builds: int = 0  # the builds of this file that failed in a row before this claim


# Which due live file first:
# - the files pushed to more destinations (more clients wait for them): a lone score makes
#   the calendar, results, standings and a dozen country files due at the same instant, and
#   a standings file that 20 destinations wait for was built after country files pushed to
#   none. This cannot starve the others: a file is claimed by one builder at a time, and
#   once built it waits for its next change and quiet period, so the few widely pushed files
#   take turns with the rest;
# - then the file whose oldest unbuilt change is oldest: first come, first served by change,
#   which bounds how long any change waits for its files (ordering by due time let files
#   with a short quiet period overtake one held to its cap);
# - then the biggest first: they take the longest to build, and starting them first
#   finishes the set soonest (the calendar, 3 MB, takes longest).
# Subscribers are counted as fan-out counts them (a subscription to every filter, plus those
# to the file's own), once per definition and filter and hash-joined. A file not built yet
# counts none.
CLAIM_NEXT_LIVE = """
WITH pushed AS (
    SELECT definition_id, filter, count(*) AS n FROM clients_subscription WHERE active
    GROUP BY definition_id, filter)
UPDATE feeds_pendingbuild SET
    claim_token = %(token)s, claimed_at = clock_timestamp(),
    claimed_until = clock_timestamp() + %(ttl)s * interval '1 second'
WHERE doc_key = (
    SELECT p.doc_key FROM feeds_pendingbuild p
    LEFT JOIN feeds_feeddocument d ON d.doc_key = p.doc_key
    LEFT JOIN pushed every_filter ON every_filter.definition_id = d.definition_id AND every_filter.filter = ''
    LEFT JOIN pushed own_filter ON own_filter.definition_id = d.definition_id AND own_filter.filter = d.filter
        AND d.filter <> ''
    WHERE p.lane = %(lane)s AND p.due_at <= clock_timestamp()
      AND (p.claimed_until IS NULL OR p.claimed_until < clock_timestamp())
    ORDER BY COALESCE(every_filter.n, 0) + COALESCE(own_filter.n, 0) DESC,
             p.first_change_at, d.size DESC NULLS FIRST
    LIMIT 1 FOR UPDATE OF p SKIP LOCKED)
RETURNING doc_key, generation, claimed_at, failed_builds
"""

# Bulk files first come, first served, along the (lane, due_at) index: a bulk lane can hold
# thousands of due files (a new Games' first builds), and ordering them all as the live lane
# does took 39 ms a claim with 16,000 due (PostgreSQL's time: ten minutes for a Games' first
# builds). Nothing in the bulk lane is urgent: what is goes in the live lane.
CLAIM_NEXT_BULK = """
UPDATE feeds_pendingbuild SET
    claim_token = %(token)s, claimed_at = clock_timestamp(),
    claimed_until = clock_timestamp() + %(ttl)s * interval '1 second'
WHERE doc_key = (
    SELECT p.doc_key FROM feeds_pendingbuild p
    WHERE p.lane = %(lane)s AND p.due_at <= clock_timestamp()
      AND (p.claimed_until IS NULL OR p.claimed_until < clock_timestamp())
    ORDER BY p.due_at
    LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING doc_key, generation, claimed_at, failed_builds
"""


def claim_next_due(lanes: list[str]) -> Claim | None:
    """Take the most urgent due file of these lanes (live before bulk), or None if nothing is due."""
    for lane, statement in ((LIVE, CLAIM_NEXT_LIVE), (BULK, CLAIM_NEXT_BULK)):
        if lane in lanes and (claim := _claim(statement, lane)) is not None:
            return claim
    return None


def _claim(statement: str, lane: str) -> Claim | None:
    token = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(statement, {"token": token, "lane": lane, "ttl": claim_renewal.ttl_s()})
        row = cursor.fetchone()
    return Claim(row[0], token, row[1], row[2], row[3]) if row else None


def renew(claim: Claim) -> bool:
    """Extend a claim while its build runs; False once it is not ours any more."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE feeds_pendingbuild SET claimed_until = clock_timestamp() + %s * interval '1 second'"
            " WHERE doc_key = %s AND claim_token = %s", [claim_renewal.ttl_s(), claim.doc_key, claim.token])
        return cursor.rowcount == 1


def finish(claim: Claim) -> bool:
    """Close a built claim. Changes that arrived during the build stay pending (True)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM feeds_pendingbuild WHERE doc_key = %s AND claim_token = %s AND generation = %s",
            [claim.doc_key, claim.token, claim.generation],
        )
        if cursor.rowcount:
            return False
        # A change arrived while we built; our snapshot may predate it. Its first change is
        # no earlier than our claim, so counting from the claim keeps the cap (BUILD_MAX_WAIT_S).
        cursor.execute(
            """UPDATE feeds_pendingbuild SET claim_token = NULL, claimed_until = NULL,
                   first_change_at = %(at)s, failed_builds = 0, last_error = '',
                   due_at = LEAST(%(at)s + %(max_wait)s * interval '1 second',
                                  last_change_at + %(quiet)s * interval '1 second')
               WHERE doc_key = %(key)s AND claim_token = %(token)s""",
            {"at": claim.claimed_at, "key": claim.doc_key, "token": claim.token,
             "quiet": omnium_setting("BUILD_QUIET_S"), "max_wait": omnium_setting("BUILD_MAX_WAIT_S")},
        )
        return True


def release(claim: Claim, retry_in_s: float) -> None:
    """Give a claim back after a superseded build; due again in `retry_in_s`."""
    with connection.cursor() as cursor:
        cursor.execute(
            """UPDATE feeds_pendingbuild SET claim_token = NULL, claimed_until = NULL,
                   due_at = clock_timestamp() + %s * interval '1 second'
               WHERE doc_key = %s AND claim_token = %s""",
            [retry_in_s, claim.doc_key, claim.token],
        )


def release_failed(claim: Claim, retry_in_s: float, error: str) -> int:
    """Give a claim back after its build failed; due again in `retry_in_s`. Returns how many
    builds of the file have now failed in a row."""
    with connection.cursor() as cursor:
        cursor.execute(
            """UPDATE feeds_pendingbuild SET claim_token = NULL, claimed_until = NULL,
                   due_at = clock_timestamp() + %s * interval '1 second',
                   failed_builds = failed_builds + 1, last_error = %s
               WHERE doc_key = %s AND claim_token = %s
               RETURNING failed_builds""",
            [retry_in_s, error, claim.doc_key, claim.token],
        )
        row = cursor.fetchone()
    return row[0] if row else claim.failed_builds + 1


def next_due_in(lanes: list[str]) -> float | None:
    """Seconds until the next unclaimed pending build of these lanes is due (0 if overdue),
    None if there is none."""
    # Not GREATEST(0, …) in SQL: it skips a NULL, so "none pending" read as "due now", and
    # every idle builder woke itself every NOTHING_CLAIMED_RETRY_S, forever (5 tasks a second
    # per lane in the bench logs, with nothing to build).
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT EXTRACT(EPOCH FROM MIN(due_at) - clock_timestamp())
               FROM feeds_pendingbuild WHERE lane = ANY(%s)
                 AND (claimed_until IS NULL OR claimed_until < clock_timestamp())""",
            [list(lanes)],
        )
        value = cursor.fetchone()[0]
    return None if value is None else max(0.0, float(value))
