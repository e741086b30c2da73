"""The calendar: every fixture of the Games by day, with its competitors and scores."""

from itertools import groupby

from omnium.feeds.canonical import iso_date
from omnium.feeds.resolvers import fixture_documents
from omnium.feeds.resolvers.base import Resolved


def resolve(games, filter: str) -> Resolved:
    fixtures = fixture_documents.listed(games)
    resolved = Resolved(data=None)
    resolved.depends_on("fixture", (f.id for f in fixtures))
    resolved.saw_change(*(f.changed_at for f in fixtures))
    by_day = groupby(fixtures, key=lambda f: f.starts_at.date())
    resolved.data = {
        "days": [
            {"date": iso_date(day), "fixtures": [f.document for f in day_fixtures]}
            for day, day_fixtures in by_day
        ]
    }
    return resolved
