"""Which Games a public document named by its record id alone belongs to (/v1/fixtures/{id},
/v1/athletes/{id}/career), so that the client's entitlement to that Games can be checked.

One indexed PostgreSQL read (feed_document_by_record) per id per process, then memory; kept
at most PULL_CATALOGUE_MAX_AGE_S, since an athlete may enter another Games. Unknown ids are
not remembered: the next build may create them, and the client rate limit bounds the reads.
"""

import time

from django.db import connection

from omnium.caching.memory_lru import ByteBoundedLru
from omnium.conf import omnium_setting

REMEMBERED_IDS = 200_000  # ~12,000 athletes and ~4,300 fixtures per Games

GAMES_OF_RECORD = """
SELECT DISTINCT g.code FROM feeds_feeddocument d JOIN games_games g ON g.id = d.games_id
WHERE d.feed_type = %s AND d.filter = %s
"""

_remembered = ByteBoundedLru(REMEMBERED_IDS, size_of=lambda entry: 1)


def games_of(feed_type: str, filter: str) -> frozenset[str]:
    """The codes of the Games that have this document; empty when there is none."""
    key = (feed_type, filter)
    entry = _remembered.get(key)
    if entry is None or time.monotonic() - entry[1] > omnium_setting("PULL_CATALOGUE_MAX_AGE_S"):
        entry = _read(feed_type, filter)
        if entry is not None:
            _remembered.put(key, entry)
    return entry[0] if entry is not None else frozenset()


def _read(feed_type: str, filter: str) -> tuple[frozenset[str], float] | None:
    with connection.cursor() as cursor:
        cursor.execute(GAMES_OF_RECORD, [feed_type, filter])
        codes = frozenset(row[0] for row in cursor.fetchall())
    return (codes, time.monotonic()) if codes else None
