"""Change-to-built latency, measured from PostgreSQL's own records.

A change (outbox row) is "built" when the first file version containing it commits: a version
of a file the change touched whose build snapshot could see the change's transaction
(pg_visible_in_snapshot). The outbox row's created_at is taken at the end of the change's
transaction, so it is the commit time to within a millisecond.
"""

from django.db import connection

CHANGE_TO_BUILT = """
SELECT o.id, EXTRACT(EPOCH FROM (
    SELECT MIN(v.committed_at) FROM feeds_feedversion v
    WHERE v.committed_at >= o.created_at
      AND pg_visible_in_snapshot(o.xact_id, v.snapshot)
      AND v.doc_key IN (
          SELECT d.doc_key FROM feed_dependency d, jsonb_array_elements(o.records) AS r
          WHERE d.record_kind = r->>0 AND d.record_id = (r->>1)::uuid)
) - o.created_at)
FROM games_outbox o
WHERE o.id > %s AND o.games_id = %s
ORDER BY o.id
"""


def change_to_built_seconds(games, after_outbox_id: int = 0) -> list[float | None]:
    """Per change after `after_outbox_id`: seconds to its first built version (None: none yet
    or the change altered no file's content)."""
    with connection.cursor() as cursor:
        cursor.execute(CHANGE_TO_BUILT, [after_outbox_id, games.pk])
        return [None if seconds is None else float(seconds) for _, seconds in cursor.fetchall()]


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, round(fraction * len(ordered) + 0.4999))
    return ordered[min(rank, len(ordered)) - 1]
