"""Feed types for pull clients and fans: big files split small, and the public documents.

The calendar is too heavy to poll whole (3 MB at Asian Games scale), so it is also offered
per day and per fixture; the public documents (a fixture, a unit's standings, an athlete's
career) are built the same way. Each is an ordinary feed type: per-record dependencies,
rebuilt only on change, a new version only when its hash changes, published to Redis by
the Redis destinations.
"""

from omnium.pullapi.resolvers import calendar_day, career, fixture, unit_standings

PULL_RESOLVERS = {
    "calendar_day": calendar_day.resolve,
    "fixture": fixture.resolve,
    "unit_standings": unit_standings.resolve,
    "career": career.resolve,
}

# (feed type, name): definitions `ensure_pull_cache` adds to a Games. None is per NOC; their
# filters (a day, a fixture id, a unit code, an athlete id) come from `pull_files_of`.
PULL_DEFINITIONS = (
    ("calendar_day", "Calendar, one day"),
    ("fixture", "Fixture"),
    ("unit_standings", "Standings of one unit"),
    ("career", "Athlete career"),
)

# A client entitled to the feed on the left also gets these split files of it.
SPLITS = {"calendar": ("calendar_day", "fixture")}
PARENT_OF = {split: parent for parent, splits in SPLITS.items() for split in splits}


def register() -> None:
    from omnium.feeds.resolvers import RESOLVERS

    for feed_type, resolve in PULL_RESOLVERS.items():
        RESOLVERS.setdefault(feed_type, resolve)
