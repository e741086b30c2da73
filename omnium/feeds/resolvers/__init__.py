"""The registry of resolvers: feed type -> function building that file's data."""

from omnium.feeds.resolvers import calendar, country, entries, medals, participants, results, standings

RESOLVERS = {
    "calendar": calendar.resolve,
    "medals": medals.resolve,
    "results": results.resolve,
    "entries": entries.resolve,
    "participants": participants.resolve,
    "standings": standings.resolve,
    "country": country.resolve,
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
