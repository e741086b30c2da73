"""Results: per medal event, every fixture that has started, ranked, and the medals."""

from collections import defaultdict

from omnium.feeds.resolvers import fixture_documents, fixture_rows
from omnium.feeds.resolvers.base import Resolved
from omnium.games.models import Fixture, MedalAward, MedalEvent

MEDAL_ORDER = {"gold": 0, "silver": 1, "bronze": 2}
STARTED = [status for status in Fixture.Status if status != Fixture.Status.SCHEDULED]


def medals_by_event(games) -> dict:
    awards = MedalAward.objects.filter(event__games=games).values_list(
        "event_id", "medal", "entry_id", "entry__noc__code",
        "entry__athlete__given_name", "entry__athlete__family_name", "entry__team__name",
    )
    grouped = defaultdict(list)
    for event_id, medal, entry_id, noc, given, family, team in awards:
        grouped[event_id].append({
            "medal": medal, "entry": str(entry_id), "noc": noc,
            "name": fixture_rows.competitor_name(given, family, team),
        })
    for medals in grouped.values():
        medals.sort(key=lambda m: (MEDAL_ORDER[m["medal"]], m["entry"]))
    return grouped


def resolve(games, filter: str) -> Resolved:
    resolved = Resolved(data=None)
    events = list(MedalEvent.objects.filter(games=games).order_by("code").values("id", "code", "name", "changed_at"))
    # Every fixture and event, because a scheduled fixture joins this file when it starts.
    resolved.depends_on("fixture", fixture_rows.fixture_ids(games))
    resolved.depends_on("unit", (e["id"] for e in events))
    resolved.depends_on("medal_award", (e["id"] for e in events))
    started = defaultdict(list)
    for fixture in fixture_documents.listed(games, status__in=STARTED):
        started[fixture.event_id].append(fixture.document)
        resolved.saw_change(fixture.changed_at)
    medals = medals_by_event(games)
    for event in events:
        if medals.get(event["id"]):
            resolved.saw_change(event["changed_at"])
    resolved.data = {
        "events": [
            {"code": e["code"], "name": e["name"], "fixtures": started[e["id"]], "medals": medals.get(e["id"], [])}
            for e in events
            if started[e["id"]]
        ]
    }
    return resolved
