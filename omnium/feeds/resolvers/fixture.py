"""One fixture with its competitors (filter: its compact id): the calendar's per-fixture split,
and /v1/fixtures/{id}."""

from omnium.database.server_binding import prepared_dicts
from omnium.feeds import record_ids
from omnium.feeds.resolvers import fixture_rows
from omnium.feeds.resolvers.base import Resolved, UnknownFile
from omnium.games.models import Fixture


def resolve(games, filter: str) -> Resolved:
    try:
        fixture_id = record_ids.expand(filter)
    except ValueError:
        raise UnknownFile(f"{filter!r} is not a fixture id") from None
    found = prepared_dicts(Fixture.objects.filter(games=games, pk=fixture_id), fixture_rows.FIXTURE_FIELDS)
    if not found:
        raise UnknownFile(f"no fixture {filter} in {games.code}")
    row = dict(found[0], competitors=fixture_rows.competitors_by_fixture([fixture_id]).get(fixture_id, []))
    resolved = Resolved(data={"fixture": fixture_rows.fixture_document(row)})
    resolved.depends_on("fixture", [fixture_id])
    resolved.saw_change(row["changed_at"])
    return resolved
