"""The standings of one unit (medal event), filter: its code, for /v1/standings/{games}/{unit}."""

from omnium.feeds.resolvers import fixture_rows
from omnium.feeds.resolvers.base import Resolved, UnknownFile
from omnium.feeds.resolvers.standings import tally
from omnium.games.models import Fixture, MedalEvent


def resolve(games, filter: str) -> Resolved:
    event = MedalEvent.objects.filter(games=games, code=filter).values("id", "code", "name").first()
    if event is None:
        raise UnknownFile(f"no unit {filter!r} in {games.code}")
    fixtures = fixture_rows.fixtures(games, event_id=event["id"])
    finished = [f for f in fixtures if f["status"] == Fixture.Status.FINISHED]
    resolved = Resolved(data={"unit": {"code": event["code"], "name": event["name"]}, "table": tally(finished)})
    resolved.depends_on("fixture", (f["id"] for f in fixtures))
    resolved.depends_on("unit", [event["id"]])
    resolved.saw_change(*(f["changed_at"] for f in finished))
    return resolved
