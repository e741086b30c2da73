"""An athlete's career across every Games (filter: the athlete's compact id), for /v1/athletes/{id}/career.

Built under each Games the athlete entered; all copies hold the same data, and the pull
cache keeps whichever version is newest.
"""

from django.db.models import Q

from omnium.database.server_binding import prepared_dicts
from omnium.feeds import record_ids
from omnium.feeds.canonical import decimal_text
from omnium.feeds.resolvers.base import Resolved, UnknownFile
from omnium.games.models import Athlete, Competitor, MedalAward


def _athlete(filter: str) -> dict:
    try:
        athlete_id = record_ids.expand(filter)
    except ValueError:
        raise UnknownFile(f"{filter!r} is not an athlete id") from None
    found = prepared_dicts(Athlete.objects.filter(pk=athlete_id),
                           ("id", "given_name", "family_name", "noc__code", "changed_at"))
    if not found:
        raise UnknownFile(f"no athlete {filter}")
    return found[0]


def resolve(games, filter: str) -> Resolved:
    athlete = _athlete(filter)
    mine = Q(entry__athlete_id=athlete["id"]) | Q(entry__team__members=athlete["id"])
    places = prepared_dicts(Competitor.objects.filter(mine).order_by("fixture__starts_at", "fixture_id"), (
        "entry_id", "entry__event_id", "fixture_id", "fixture__changed_at", "fixture__games__code",
        "fixture__event__code", "fixture__event__name", "fixture__phase", "fixture__starts_at", "rank", "score",
    ))
    medals = dict(MedalAward.objects.filter(entry_id__in={p["entry_id"] for p in places}).values_list(
        "entry_id", "medal"))
    resolved = Resolved(data={
        "athlete": {"id": str(athlete["id"]), "name": f"{athlete['family_name'].upper()} {athlete['given_name']}",
                    "noc": athlete["noc__code"]},
        "results": [_result(p, medals) for p in places],
    })
    resolved.depends_on("athlete", [athlete["id"]])
    resolved.depends_on("fixture", {p["fixture_id"] for p in places})
    resolved.depends_on("entry", {p["entry_id"] for p in places})
    resolved.depends_on("unit", {p["entry__event_id"] for p in places})
    resolved.depends_on("medal_award", {p["entry__event_id"] for p in places})
    resolved.saw_change(athlete["changed_at"], *(p["fixture__changed_at"] for p in places))
    return resolved


def _result(place: dict, medals: dict) -> dict:
    return {
        "games": place["fixture__games__code"], "fixture": str(place["fixture_id"]),
        "unit": {"code": place["fixture__event__code"], "name": place["fixture__event__name"]},
        "phase": place["fixture__phase"], "rank": place["rank"], "score": decimal_text(place["score"]),
        "medal": medals.get(place["entry_id"]),
    }
