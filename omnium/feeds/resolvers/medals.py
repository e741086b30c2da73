"""The medal table: every NOC with a medal, ranked gold, silver, bronze."""

from omnium.feeds.resolvers.base import Resolved
from omnium.games.models import MedalStanding


def standing_document(row: dict) -> dict:
    total = row["gold"] + row["silver"] + row["bronze"]
    return {"noc": row["noc__code"], "name": row["noc__name"], "rank": row["rank"],
            "gold": row["gold"], "silver": row["silver"], "bronze": row["bronze"], "total": total}


def resolve(games, filter: str) -> Resolved:
    resolved = Resolved(data=None)
    standings = list(
        MedalStanding.objects.filter(games=games).order_by("rank", "noc__code").values(
            "id", "gold", "silver", "bronze", "rank", "changed_at", "noc__code", "noc__name"
        )
    )
    # Every NOC's line, also those without a medal yet: its first medal changes this file.
    resolved.depends_on("medal_standing", (s["id"] for s in standings))
    resolved.saw_change(*(s["changed_at"] for s in standings))
    resolved.data = {
        "table": [standing_document(s) for s in standings if s["gold"] + s["silver"] + s["bronze"]]
    }
    return resolved
