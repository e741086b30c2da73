"""Shared reads for resolvers: fixtures with their competitors, as plain rows (fast)."""

from collections import defaultdict

from django.db.models import Func, TextField
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast

from omnium.database.server_binding import prepared_dicts, prepared_rows
from omnium.feeds.canonical import iso_time
from omnium.games.models import Competitor, Fixture


def competitor_name(given: str | None, family: str | None, team: str | None) -> str:
    return team if team else f"{family.upper()} {given}"


def as_text(field: str) -> Cast:
    """A column as text, made by PostgreSQL: for ids the file shows only as text."""
    return Cast(field, TextField())


def decimal_as_text(field: str) -> Cast:
    """A decimal column in canonical.decimal_text's form ("12.5", "10", "0"), made by
    PostgreSQL: building 20k Decimals to format them in Python was a large part of a
    calendar build."""
    return Cast(Func(field, function="trim_scale"), TextField())


def competitors_by_fixture(fixture_ids, noc=None) -> dict:
    """Each fixture's competitors in rank order (only `noc`'s, if given)."""
    selected = Competitor.objects.filter(fixture__in=fixture_ids)
    if noc is not None:
        selected = selected.filter(entry__noc=noc)
    rows = prepared_rows(
        selected
        .order_by("fixture_id", "rank", "entry_id")
        .values_list(
            "fixture_id", as_text("entry_id"), decimal_as_text("score"), "rank", "entry__noc__code",
            "entry__athlete__given_name", "entry__athlete__family_name", "entry__team__name",
        )
    )
    grouped = defaultdict(list)
    for fixture_id, entry_id, score, rank, noc, given, family, team in rows:
        grouped[fixture_id].append({
            "entry": entry_id,
            "name": competitor_name(given, family, team),
            "noc": noc,
            "score": score,
            "rank": rank,
        })
    return grouped


FIXTURE_FIELDS = (
    "id", "phase", "is_medal_fixture", "starts_at", "venue", "status", "result_status",
    "changed_at", "event_id", "event__code", "event__name", "event__discipline__name",
    "event__discipline__sport__name",
)


def fixtures(games, noc=None, **where) -> list[dict]:
    """The Games' fixtures in schedule order, each with its competitors under "competitors"
    and its row version under "row_version" (see `selected`).

    `where` narrows them in the query (Django lookups, e.g. status="finished"): a file that
    shows a few fixtures should not fetch the competitors of all 4,000.

    Given a `noc`: only the fixtures where it competes, each with only its competitors. A
    country's file shows no one else, and fetching every heat's full field to throw most of
    it away was most of the work of the ~10 country builds a second in a busy hour."""
    chosen = selected(games, noc, **where)
    competitors = competitors_by_fixture(chosen.values("id"), noc)
    rows = prepared_dicts(chosen.order_by("starts_at", "id"), (*FIXTURE_FIELDS, "row_version"))
    return [dict(row, competitors=competitors.get(row["id"], [])) for row in rows]


def selected(games, noc=None, **where):
    """The fixtures `fixtures` returns, as a query, with each row's version ("row_version": the
    id of the transaction that wrote it, which changes with every update of the row)."""
    chosen = Fixture.objects.filter(games=games, **where)
    if noc is not None:
        chosen = chosen.filter(pk__in=Competitor.objects.filter(entry__noc=noc).values("fixture_id"))
    return chosen.annotate(row_version=RawSQL("games_fixture.xmin::text", ()))


def fixture_ids(games) -> list:
    """The ids of all the Games' fixtures: what a file depends on beyond the fixtures it
    shows, at the cost of one column."""
    return list(Fixture.objects.filter(games=games).values_list("id", flat=True))


def fixture_document(row: dict) -> dict:
    """How a fixture appears in every file that lists fixtures."""
    return {
        "id": str(row["id"]),
        "event": {"code": row["event__code"], "name": row["event__name"]},
        "sport": row["event__discipline__sport__name"],
        "discipline": row["event__discipline__name"],
        "phase": row["phase"],
        "medal_fixture": row["is_medal_fixture"],
        "starts_at": iso_time(row["starts_at"]),
        "venue": row["venue"],
        "status": row["status"],
        "result": row["result_status"],
        "competitors": row["competitors"],
    }
