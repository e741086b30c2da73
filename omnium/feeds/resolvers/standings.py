"""Standings: per medal event, each competitor's tally over its finished fixtures.

Points per finished fixture: (competitors in it) - rank + 1, so winning a bigger heat is worth
more. Ordered by points, then best rank, then entry id (deterministic).
"""

from collections import defaultdict

from omnium.feeds.resolvers import fixture_rows
from omnium.feeds.resolvers.base import Resolved
from omnium.games.models import Fixture, MedalEvent


def tally(finished: list[dict]) -> list[dict]:
    table = {}
    for fixture in finished:
        size = len(fixture["competitors"])
        for place in fixture["competitors"]:
            line = table.setdefault(place["entry"], {
                "entry": place["entry"], "name": place["name"], "noc": place["noc"],
                "played": 0, "points": 0, "best_rank": None,
            })
            line["played"] += 1
            if place["rank"] is not None:
                line["points"] += size - place["rank"] + 1
                line["best_rank"] = min(filter(None, (line["best_rank"], place["rank"])))
    return sorted(table.values(), key=lambda line: (-line["points"], line["best_rank"] or 999, line["entry"]))


def resolve(games, filter: str) -> Resolved:
    resolved = Resolved(data=None)
    events = list(MedalEvent.objects.filter(games=games).order_by("code").values("id", "code", "name"))
    # Standings count finished fixtures only, so they follow "fixture_result" (a fixture
    # finished, or a finished one re-ranked), not every live score: a score in a running
    # fixture rebuilt this file for nothing and kept its quiet period from ever ending.
    resolved.depends_on("fixture_result", fixture_rows.fixture_ids(games))
    resolved.depends_on("unit", (e["id"] for e in events))
    finished = defaultdict(list)
    for fixture in fixture_rows.fixtures(games, status=Fixture.Status.FINISHED):
        finished[fixture["event_id"]].append(fixture)
        resolved.saw_change(fixture["changed_at"])
    resolved.data = {
        "events": [
            {"code": e["code"], "name": e["name"], "table": tally(finished[e["id"]])}
            for e in events
            if finished[e["id"]]
        ]
    }
    return resolved
