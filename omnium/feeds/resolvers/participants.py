"""Participants: every athlete and team entered at the Games, with the events they enter."""

from collections import defaultdict

from omnium.feeds.canonical import iso_date
from omnium.feeds.resolvers.base import Resolved
from omnium.games.models import Entry, MedalEvent, Team


def resolve(games, filter: str) -> Resolved:
    resolved = Resolved(data=None)
    resolved.depends_on("unit", MedalEvent.objects.filter(games=games).values_list("id", flat=True))
    entries = list(
        Entry.objects.filter(games=games, status=Entry.Status.ENTERED).values_list(
            "id", "changed_at", "athlete_id", "team_id", "event__code"
        )
    )
    resolved.depends_on("entry", (e[0] for e in entries))
    resolved.saw_change(*(e[1] for e in entries))
    events_of = defaultdict(set)
    for _, _, athlete_id, team_id, event_code in entries:
        events_of[athlete_id or team_id].add(event_code)
    teams = list(
        Team.objects.filter(pk__in=[e[3] for e in entries if e[3]]).order_by("id").select_related("noc").prefetch_related("members")
    )
    athlete_rows = _athletes(events_of.keys(), teams)
    resolved.saw_change(*(a["changed_at"] for a in athlete_rows), *(t.changed_at for t in teams))
    resolved.data = {
        "athletes": [
            {
                "id": str(a["id"]), "given_name": a["given_name"], "family_name": a["family_name"],
                "noc": a["noc__code"], "gender": a["gender"], "birth_date": iso_date(a["birth_date"]),
                "events": sorted(events_of.get(a["id"], ())),
            }
            for a in athlete_rows
        ],
        "teams": [
            {
                "id": str(t.pk), "name": t.name, "noc": t.noc.code,
                "members": sorted(str(m.pk) for m in t.members.all()),
                "events": sorted(events_of[t.pk]),
            }
            for t in teams
        ],
    }
    return resolved


def _athletes(competitor_ids, teams) -> list[dict]:
    from omnium.games.models import Athlete

    ids = set(competitor_ids) | {m.pk for t in teams for m in t.members.all()}
    return list(
        Athlete.objects.filter(pk__in=ids).order_by("noc__code", "family_name", "id").values(
            "id", "given_name", "family_name", "noc__code", "gender", "birth_date", "changed_at"
        )
    )
