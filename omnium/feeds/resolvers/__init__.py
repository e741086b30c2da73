"""The registry of feed types: feed type -> the resolver building that file's data.

Adding a feed type is one resolver module here plus one line in RESOLVERS (and, for a file
every Games gets, one line in STANDARD_DEFINITIONS).

Two families of files share the builder, the outbox reader and delivery:
- the standard files that push clients subscribe to (calendar, medals, results…);
- files for pull clients and fans: the calendar split small (3 MB at Asian Games scale is
  too heavy to poll whole: per day and per fixture) and the public documents (a fixture, a
  unit's standings, an athlete's career). Each is an ordinary feed type: per-record
  dependencies, rebuilt only on change, a new version only when its hash changes.
"""

from omnium.feeds.resolvers import (
    calendar,
    calendar_day,
    career,
    country,
    entries,
    fixture,
    medals,
    participants,
    results,
    standings,
    unit_standings,
)

RESOLVERS = {
    "calendar": calendar.resolve,
    "medals": medals.resolve,
    "results": results.resolve,
    "entries": entries.resolve,
    "participants": participants.resolve,
    "standings": standings.resolve,
    "country": country.resolve,
    "calendar_day": calendar_day.resolve,
    "fixture": fixture.resolve,
    "unit_standings": unit_standings.resolve,
    "career": career.resolve,
}

# The files every Games gets: (feed type, name, one file per NOC).
STANDARD_DEFINITIONS = (
    ("calendar", "Calendar", False),
    ("medals", "Medal table", False),
    ("results", "Results", False),
    ("entries", "Entries", False),
    ("participants", "Participants", False),
    ("standings", "Standings", False),
    ("country", "Country", True),
)

# (feed type, name): the pull files a Games gets with its pull cache. Their filters (a day, a
# fixture id, a unit code, an athlete id) come from the Games' records.
PULL_DEFINITIONS = (
    ("calendar_day", "Calendar, one day"),
    ("fixture", "Fixture"),
    ("unit_standings", "Standings of one unit"),
    ("career", "Athlete career"),
)

# Files one per record (a day, a fixture, a unit, an athlete): their filters come from the
# Games' records (pullapi.pull_cache_destinations lists them), and they always take one.
PER_RECORD_FEED_TYPES = frozenset(feed_type for feed_type, _ in PULL_DEFINITIONS)

# A client entitled to the feed on the left also gets these split files of it.
SPLITS = {"calendar": ("calendar_day", "fixture")}
PARENT_OF = {split: parent for parent, splits in SPLITS.items() for split in splits}
