"""From what a client asked for to a file address, refusing what it may not have.

Answers 404 for a Games or feed type that does not exist, 400 for a malformed filter and
403 for a file the client is not entitled to; all from the in-memory catalogue.
"""

import re
import uuid
from datetime import date

from omnium.feeds import record_ids
from omnium.feeds.doc_keys import FileKey
from omnium.feeds.resolvers import PULL_DEFINITIONS
from omnium.pullapi.addresses import FeedFileAddress, PublicDocumentAddress
from omnium.pullapi.catalogue import AS_BUILT, PullClient, holder
from omnium.pullapi.problems import Malformed, NotEntitled, UnknownFile

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,39}")
_FEED_TYPE = re.compile(r"[a-z_]{1,30}")

# Pull files are one per record (a day, a fixture, a unit, an athlete): they always take a filter.
PER_RECORD_FEED_TYPES = frozenset(feed_type for feed_type, _ in PULL_DEFINITIONS)


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
    if not (_NAME.fullmatch(games) and _FEED_TYPE.fullmatch(feed_type)):
        raise Malformed("The Games code or feed type is malformed.")
    per_noc = holder.snapshot.definition(games, feed_type)
    if per_noc is None:
        raise UnknownFile(f"There is no {feed_type} feed for Games {games!r}.")
    needs_filter = per_noc or feed_type in PER_RECORD_FEED_TYPES
    if needs_filter != bool(filter):
        raise Malformed(f"The {feed_type} feed {'needs' if needs_filter else 'takes no'} filter.")
    if filter:
        check_filter(feed_type, filter)
    doc_key = f"{games}/{feed_type}/{filter}" if filter else f"{games}/{feed_type}"  # as FileKey spells it
    if not isinstance(user, PullClient):
        return FeedFileAddress(doc_key)  # staff: the file as built
    shape = user.shape_for(games, feed_type, filter)
    if shape is None:
        raise NotEntitled()
    return FeedFileAddress(doc_key, shape, user.id)


def record_filter(record_id: str) -> str:
    """The file filter of a record named by its UUID in the address (400 if it is not one)."""
    try:
        return record_ids.compact(uuid.UUID(record_id))
    except ValueError:
        raise Malformed(f"{record_id!r} is not an id (a UUID).") from None


def public_document(feed_type: str, record_id: str) -> PublicDocumentAddress:
    return PublicDocumentAddress(feed_type, record_filter(record_id))


def games_document(games: str, feed_type: str, filter: str = "") -> FeedFileAddress:
    """A public document of one Games (medals, a unit's standings): as built, for any key."""
    if not _NAME.fullmatch(games):
        raise Malformed("The Games code is malformed.")
    if filter:
        check_filter(feed_type, filter)
    if holder.snapshot.definition(games, feed_type) is None:
        raise UnknownFile(f"There is no {feed_type} document for Games {games!r}.")
    return FeedFileAddress(str(FileKey(games, feed_type, filter)), AS_BUILT)


def legacy_feed_type(games: str, feedtype: str) -> tuple[str, str]:
    """/getfeeds' feedtype: a feed type ("medals"), or a feed type and its filter joined by
    its last underscore ("country_IND", "calendar_day_2026-09-23")."""
    if holder.snapshot.definition(games, feedtype) is not None:
        return feedtype, ""
    feed_type, _, filter = feedtype.rpartition("_")
    if not feed_type or not filter:
        raise UnknownFile(f"There is no {feedtype} feed for Games {games!r}.")
    return feed_type, filter
