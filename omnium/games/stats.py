"""Stats: figures computed from the Games data, e.g. the medal table's standings.

A stat is a function (games, job) -> list of record refs it changed. It runs inside the stat
job's transaction, so its outbox row commits with its effect.
"""

from collections import Counter

from omnium.games.models import ClockTimestamp, Entry, Games, MedalAward, MedalStanding

MEDAL_ORDER = ("gold", "silver", "bronze")


def medal_standings(games: Games, job) -> list:
    """Recount every NOC's medals and rank them (gold, then silver, then bronze)."""
    counts = Counter(
        MedalAward.objects.filter(event__games=games)
        .exclude(entry__status=Entry.Status.WITHDRAWN)
        .values_list("entry__noc_id", "medal")
    )
    standings = {s.noc_id: s for s in MedalStanding.objects.select_for_update().filter(games=games)}
    for noc_id, _ in counts:
        if noc_id not in standings:
            standings[noc_id] = MedalStanding.objects.create(games=games, noc_id=noc_id)
    tallies = {noc_id: tuple(counts[(noc_id, m)] for m in MEDAL_ORDER) for noc_id in standings}
    ranks = _competition_ranks(tallies)
    changed = []
    for noc_id, standing in standings.items():
        new = (*tallies[noc_id], ranks[noc_id])
        if (standing.gold, standing.silver, standing.bronze, standing.rank) != new:
            MedalStanding.objects.filter(pk=standing.pk).update(
                gold=new[0], silver=new[1], bronze=new[2], rank=new[3], changed_at=ClockTimestamp()
            )
            changed.append(("medal_standing", standing.pk))
    return changed


def _competition_ranks(tallies: dict) -> dict:
    """1, 2, 2, 4 ranking of NOCs with a medal; NOCs without one have no rank."""
    ordered = sorted((t for t in tallies.items() if sum(t[1])), key=lambda t: t[1], reverse=True)
    ranks, previous = {}, None
    for index, (noc_id, tally) in enumerate(ordered):
        ranks[noc_id] = ranks[previous[0]] if previous and previous[1] == tally else index + 1
        previous = (noc_id, tally)
    return {noc_id: ranks.get(noc_id) for noc_id in tallies}


STATS = {
    "medal_standings": medal_standings,
}
