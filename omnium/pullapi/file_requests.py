"""From what a client asked for to a file address, refusing what it may not have.

In this order: 400 for malformed parameters, 403 for a file the client is not entitled to,
404 for a Games, feed type or record that does not exist. Entitlement comes before existence,
so a key learns nothing about what lies outside its entitlements (a Games' code, a fixture
id). Staff, entitled to everything, get the 404s. A record named by its id alone answers 404
both when the id is unknown and when its Games lies outside the key's entitlements, so its
answer tells no one which ids exist elsewhere. All from the in-memory catalogue, but for
a record named by its id alone (`record_games`: an index, then memory).

Public documents are gated by the feed they are drawn from: a Games' medal table by its
medals feed, a unit's standings by its standings, a fixture by its calendar, an athlete's
career by the results of a Games the athlete entered.
"""

import re
import uuid
from datetime import date

from omnium.clients.shapes import AS_BUILT
from omnium.feeds import record_ids
from omnium.feeds.doc_keys import FileKey
from omnium.feeds.resolvers import PER_RECORD_FEED_TYPES
from omnium.pullapi import record_games
from omnium.pullapi.catalogue import PullClient, holder
from omnium.pullapi.file_locations import FeedFileAddress, PublicDocumentAddress
from omnium.pullapi.problems import Malformed, NotEntitled, UnknownFile

# What the address's parts may look like; the OpenAPI schema publishes the same patterns
# (omnium/pullapi/schema.py), and only a part that breaks them is a 400.
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9-]{0,39}"  # a Games code, a filter (NOC, day, unit), a client
FEED_TYPE_PATTERN = r"[a-z_]{1,30}"
_NAME = re.compile(NAME_PATTERN)
_FEED_TYPE = re.compile(FEED_TYPE_PATTERN)


def _valid_date(text: str) -> bool:
    try:
        date.fromisoformat(text)
        return len(text) == 10
    except ValueError:
        return False


def _valid_compact_id(text: str) -> bool:
    try:
        record_ids.expand(text)
        return len(text) == 26
    except ValueError:
        return False


ENTITLED_BY = {"medals": "medals", "unit_standings": "standings", "fixture": "calendar", "career": "results"}

FILTER_RULES = {
    "calendar_day": (_valid_date, "a date, YYYY-MM-DD"),
    "fixture": (_valid_compact_id, "a fixture id"),
    "career": (_valid_compact_id, "an athlete id"),
}


def check_filter(feed_type: str, filter: str) -> None:
    valid, expected = FILTER_RULES.get(feed_type, (_NAME.fullmatch, "letters, digits and '-'"))
    if not valid(filter):
        raise Malformed(f"{filter!r} is not a valid filter for {feed_type}: expected {expected}.")


def feed_file(user, games: str, feed_type: str, filter: str = "") -> FeedFileAddress:
    if not (_NAME.fullmatch(games) and _FEED_TYPE.fullmatch(feed_type)) or (filter and not _NAME.fullmatch(filter)):
        raise Malformed("The Games code, feed type or filter is malformed.")
    shape = user.shape_for(games, feed_type, filter) if isinstance(user, PullClient) else AS_BUILT
    if shape is None:
        raise NotEntitled()
    per_noc = holder.snapshot.definition(games, feed_type)
    if per_noc is None:
        raise UnknownFile(f"There is no {feed_type} feed for Games {games!r}.")
    _check_names_a_file(feed_type, filter, per_noc)
    doc_key = f"{games}/{feed_type}/{filter}" if filter else f"{games}/{feed_type}"  # as FileKey spells it
    return FeedFileAddress(doc_key, shape, user.id if isinstance(user, PullClient) else None)


def _check_names_a_file(feed_type: str, filter: str, per_noc: bool) -> None:
    """A well-formed address that names no file is a 404: which feed types take a filter, and
    of which shape, is data (definition rows) that no schema pattern can say, so a request the
    schema calls valid must not be refused as malformed."""
    needs_filter = per_noc or feed_type in PER_RECORD_FEED_TYPES
    if needs_filter != bool(filter):
        raise UnknownFile(f"The {feed_type} feed {'needs' if needs_filter else 'takes no'} filter.")
    valid, expected = FILTER_RULES.get(feed_type, (_NAME.fullmatch, ""))
    if filter and not valid(filter):
        raise UnknownFile(f"There is no {feed_type} file {filter!r}: its files are named by {expected}.")


def record_filter(record_id: str) -> str:
    """The file filter of a record named by its UUID in the address (400 if it is not one)."""
    try:
        return record_ids.compact(uuid.UUID(record_id))
    except ValueError:
        raise Malformed(f"{record_id!r} is not an id (a UUID).") from None


def public_document(user, feed_type: str, record_id: str) -> PublicDocumentAddress:
    """A fixture or a career, named by its record's id alone."""
    filter = record_filter(record_id)
    entitled = _games_entitled(user, ENTITLED_BY[feed_type])
    if entitled is not None and not entitled:
        raise NotEntitled()  # before any look-up: an id outside every entitlement tells nothing
    found_in = record_games.games_of(feed_type, filter)
    if entitled is not None:
        found_in &= entitled  # an id of a Games the key may not read is as unknown as a made-up one
    if not found_in:
        raise UnknownFile()
    return PublicDocumentAddress(feed_type, filter)


def games_document(user, games: str, feed_type: str, filter: str = "") -> FeedFileAddress:
    """A public document of one Games (medals, a unit's standings): as built."""
    if not _NAME.fullmatch(games):
        raise Malformed("The Games code is malformed.")
    if filter:
        check_filter(feed_type, filter)
    entitled = _games_entitled(user, ENTITLED_BY[feed_type])
    if entitled is not None and games not in entitled:
        raise NotEntitled()
    if holder.snapshot.definition(games, feed_type) is None:
        raise UnknownFile(f"There is no {feed_type} document for Games {games!r}.")
    return FeedFileAddress(str(FileKey(games, feed_type, filter)), AS_BUILT)


def _games_entitled(user, feed_type: str) -> set[str] | None:
    """The Games whose `feed_type` a key holder may read; None for staff (every Games)."""
    return user.games_entitled_to(feed_type) if isinstance(user, PullClient) else None


def legacy_feed_type(games: str, feedtype: str) -> tuple[str, str]:
    """/getfeeds' feedtype: a feed type ("medals"), or a feed type and its filter joined by
    its last underscore ("country_IND", "calendar_day_2026-09-23")."""
    if holder.snapshot.definition(games, feedtype) is not None or "_" not in feedtype:
        return feedtype, ""  # feed_file refuses it: 403 without the entitlement, else 404
    feed_type, _, filter = feedtype.rpartition("_")
    return feed_type, filter
