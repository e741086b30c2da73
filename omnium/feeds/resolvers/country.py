"""A country's file (filter = NOC code): its medals, its competitors and its fixtures."""

from omnium.database.server_binding import prepared_dicts
from omnium.feeds.resolvers import fixture_documents, fixture_rows
from omnium.feeds.resolvers.base import Resolved, UnknownFile
from omnium.feeds.resolvers.entries import ENTRY_FIELDS, entry_document
from omnium.feeds.resolvers.medals import standing_document
from omnium.games.models import Entry, MedalStanding, Noc


def resolve(games, filter: str) -> Resolved:
    noc = Noc.objects.filter(code=filter).first()
    entries = noc and prepared_dicts(Entry.objects.filter(games=games, noc=noc).order_by("event__code", "id"),
                                     (*ENTRY_FIELDS, "event__code"))
    if not entries:
        raise UnknownFile(f"NOC {filter!r} has no entries at {games.code}")
    resolved = Resolved(data=None)
    # The NOC itself stands for "the set of its entries": a new entry names it.
    resolved.depends_on("noc", [noc.pk])
    resolved.depends_on("entry", (e["id"] for e in entries))
    resolved.saw_change(*(e["changed_at"] for e in entries))
    fixtures = fixture_documents.listed(games, shape=_own_view, noc=noc)
    resolved.depends_on("fixture", (f.id for f in fixtures))
    resolved.saw_change(*(f.changed_at for f in fixtures))
    standing = _standing(games, noc, resolved)
    resolved.data = {
        "noc": noc.code,
        "name": noc.name,
        "medals": standing,
        "entries": [dict(entry_document(e), event=e["event__code"]) for e in entries],
        "fixtures": [f.document for f in fixtures],
    }
    return resolved


def _own_view(row: dict) -> dict:
    """A fixture as a country sees it (its row holds its own competitors only; the full
    fixture is in the calendar)."""
    fixture = fixture_rows.fixture_document(row)
    del fixture["sport"], fixture["discipline"]
    return fixture


def _standing(games, noc, resolved: Resolved) -> dict | None:
    row = (
        MedalStanding.objects.filter(games=games, noc=noc)
        .values("id", "gold", "silver", "bronze", "rank", "changed_at", "noc__code", "noc__name")
        .first()
    )
    if row is None:
        return None
    resolved.depends_on("medal_standing", [row["id"]])
    resolved.saw_change(row["changed_at"])
    return standing_document(row)
