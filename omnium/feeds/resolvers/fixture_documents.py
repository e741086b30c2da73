"""Fixtures as the files that list them show them, serialised once per row version and process.

The calendar lists all 4,240 fixtures of an Asian Games, the results every started one, a
country its own, a day its day's. Making each fixture's document from its rows on every
build was most of those builds (the calendar: 0.25 s on a quiet machine, over 1 s in a
replayed burst, once every 3 s), while between two versions a burst changes a few dozen
fixtures. So a listing reads only what orders and groups the fixtures and each one's row
version (`xmin`), and takes the canonical JSON of every fixture whose row is unchanged from
this process's memory; only the others are read in full and serialised. The file's bytes are
exactly those of serialising every document afresh (the builder's hash is over them).

Why the fixture's row version says whether its document changed: a document shows the
fixture's row, its competitors' rows and names that no workflow command edits (entries,
athletes, teams, NOCs, events); every command that changes a competitor also updates its
fixture's row in the same transaction (`changed_at`, which the file's "last updated" is
made of), so a changed document always comes with a new row version. A listing reads the
row versions in the build's own snapshot, and reads the rows it serialises in that snapshot
too, so a kept document always belongs to the version it is kept under.
"""

from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple
from uuid import UUID

import orjson

from omnium.caching.memory_lru import ByteBoundedLru
from omnium.database.server_binding import prepared_rows
from omnium.feeds.resolvers import fixture_rows

# About 700 bytes a fixture in the calendar's shape; a country's shape of each of its
# fixtures adds as much again over all NOCs: a few MB a Games, bounded for many Games.
CACHE_BYTES = 64 * 1024 * 1024

_kept = ByteBoundedLru(CACHE_BYTES)


class ListedFixture(NamedTuple):
    """What a listing needs of one fixture: its order and groups, and its document."""

    id: UUID
    starts_at: datetime
    event_id: UUID
    changed_at: datetime
    document: orjson.Fragment  # canonical JSON (sorted keys), placed as is in the file


def listed(games, shape: Callable[[dict], dict] = fixture_rows.fixture_document, noc=None,
           **where) -> list[ListedFixture]:
    """The Games' fixtures in schedule order, each as `shape` makes it of its row (with its
    competitors, only `noc`'s if given: see fixture_rows.fixtures), `where` narrowing them."""
    view = (shape, noc and noc.pk)
    rows = prepared_rows(fixture_rows.selected(games, noc, **where).order_by("starts_at", "id").values_list(
        "id", "starts_at", "event_id", "changed_at", "row_version"))
    # Keyed by the id's integer: a UUID hashes in Python, thousands of times a listing.
    documents = _kept.get_many([(*view, row[0].int, row[4]) for row in rows])
    missing = {row[0]: n for n, (row, document) in enumerate(zip(rows, documents)) if document is None}
    if missing:
        # Kept under the version read with it: in one snapshot (a build's) that is the
        # version listed above; outside one, a newer version must not be kept as the older.
        for row in fixture_rows.fixtures(games, noc=noc, pk__in=list(missing)):
            document = documents[missing[row["id"]]] = orjson.dumps(shape(row), option=orjson.OPT_SORT_KEYS)
            _kept.put((*view, row["id"].int, row["row_version"]), document)
    return [ListedFixture(row[0], row[1], row[2], row[3], orjson.Fragment(document))
            for row, document in zip(rows, documents)]


def forget_all() -> None:
    """Drop every kept document (for tests that copy rows back under their old versions)."""
    _kept.clear()
