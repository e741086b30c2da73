"""One day of the calendar (filter: the date, YYYY-MM-DD, UTC as in the whole calendar)."""

from datetime import UTC, date, datetime, time, timedelta

from omnium.feeds.canonical import iso_date
from omnium.feeds.resolvers import fixture_documents
from omnium.feeds.resolvers.base import Resolved, UnknownFile
from omnium.games.outbox import day_record


def _day(filter: str) -> date:
    try:
        return date.fromisoformat(filter)
    except ValueError:
        raise UnknownFile(f"{filter!r} is not a date (YYYY-MM-DD)") from None


def resolve(games, filter: str) -> Resolved:
    day = _day(filter)
    if not games.starts_on <= day <= games.ends_on:
        raise UnknownFile(f"{filter} is not a day of {games.code}")
    start = datetime.combine(day, time.min, tzinfo=UTC)
    fixtures = fixture_documents.listed(games, starts_at__gte=start, starts_at__lt=start + timedelta(days=1))
    resolved = Resolved(data={"date": iso_date(day), "fixtures": [f.document for f in fixtures]})
    resolved.depends_on("fixture", (f.id for f in fixtures))
    kind, day_id = day_record(games.pk, day)
    resolved.depends_on(kind, [day_id])  # what a fixture moved into this day names
    resolved.saw_change(*(f.changed_at for f in fixtures))
    return resolved
