"""Entries: per medal event, every competitor entered (and those withdrawn, marked so)."""

from collections import defaultdict

from omnium.feeds.resolvers import fixture_rows
from omnium.feeds.resolvers.base import Resolved
from omnium.games.models import Entry, MedalEvent

ENTRY_FIELDS = (
    "id", "event_id", "status", "changed_at", "noc__code",
    "athlete__given_name", "athlete__family_name", "team__name",
)


def entry_document(row: dict) -> dict:
    return {
        "id": str(row["id"]),
        "name": fixture_rows.competitor_name(row["athlete__given_name"], row["athlete__family_name"], row["team__name"]),
        "noc": row["noc__code"],
        "status": row["status"],
    }


def resolve(games, filter: str) -> Resolved:
    resolved = Resolved(data=None)
    events = list(MedalEvent.objects.filter(games=games).order_by("code").values("id", "code", "name"))
    entries = list(Entry.objects.filter(games=games).order_by("noc__code", "id").values(*ENTRY_FIELDS))
    # Units too: a new entry is not in this file's dependencies yet, its unit is.
    resolved.depends_on("unit", (e["id"] for e in events))
    resolved.depends_on("entry", (e["id"] for e in entries))
    resolved.saw_change(*(e["changed_at"] for e in entries))
    by_event = defaultdict(list)
    for entry in entries:
        by_event[entry["event_id"]].append(entry_document(entry))
    resolved.data = {
        "events": [{"code": e["code"], "name": e["name"], "entries": by_event[e["id"]]} for e in events]
    }
    return resolved
