"""A deterministic generator of a Games: the same scale and seed always give the same data.

`asian-games` matches the source's figures: about 40 sports, ~480 medal events, ~12,000
athletes and several thousand fixtures over 16 days. `small` loads in a second, for tests.
Ids are UUID5 of (Games code, kind, number), so they are stable across runs of one seed.
"""

import random
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db import connection, transaction

from omnium.feeds.definitions import add_standard_definitions
from omnium.feeds.models import FeedDefinition
from omnium.games.models import (
    Athlete,
    Competitor,
    Discipline,
    Entry,
    Fixture,
    Games,
    MedalEvent,
    MedalStanding,
    Noc,
    Sport,
    Team,
)

ID_SPACE = uuid.UUID("5b0c9a58-6c1e-4f0e-9d55-0f1a2b3c4d5e")

NOCS = [
    ("CHN", "China"), ("JPN", "Japan"), ("KOR", "Republic of Korea"), ("IND", "India"),
    ("UZB", "Uzbekistan"), ("THA", "Thailand"), ("TPE", "Chinese Taipei"), ("IRI", "IR Iran"),
    ("KAZ", "Kazakhstan"), ("INA", "Indonesia"), ("MAS", "Malaysia"), ("PHI", "Philippines"),
    ("VIE", "Vietnam"), ("HKG", "Hong Kong, China"), ("SGP", "Singapore"), ("PRK", "DPR Korea"),
    ("BRN", "Bahrain"), ("QAT", "Qatar"), ("KSA", "Saudi Arabia"), ("UAE", "United Arab Emirates"),
    ("KUW", "Kuwait"), ("MGL", "Mongolia"), ("KGZ", "Kyrgyzstan"), ("TJK", "Tajikistan"),
    ("PAK", "Pakistan"), ("SRI", "Sri Lanka"), ("BAN", "Bangladesh"), ("NEP", "Nepal"),
    ("JOR", "Jordan"), ("IRQ", "Iraq"), ("SYR", "Syria"), ("LBN", "Lebanon"), ("OMA", "Oman"),
    ("YEM", "Yemen"), ("AFG", "Afghanistan"), ("TKM", "Turkmenistan"), ("MAC", "Macao, China"),
    ("LAO", "Lao PDR"), ("CAM", "Cambodia"), ("MYA", "Myanmar"), ("BRU", "Brunei"),
    ("MDV", "Maldives"), ("BHU", "Bhutan"), ("TLS", "Timor-Leste"), ("PLE", "Palestine"),
]

SPORTS = [
    "Aquatics", "Archery", "Athletics", "Badminton", "Baseball", "Basketball", "Boxing", "Breaking",
    "Bridge", "Canoe", "Chess", "Cricket", "Cycling", "Dragon Boat", "Equestrian", "Esports",
    "Fencing", "Football", "Golf", "Gymnastics", "Handball", "Hockey", "Ju-Jitsu", "Judo", "Kabaddi",
    "Karate", "Kurash", "Modern Pentathlon", "Roller Sports", "Rowing", "Rugby", "Sailing",
    "Sepaktakraw", "Shooting", "Soft Tennis", "Sport Climbing", "Squash", "Table Tennis",
    "Taekwondo", "Tennis", "Triathlon", "Volleyball", "Weightlifting", "Wrestling", "Wushu",
]

SYLLABLES = ["an", "bo", "chen", "da", "el", "fa", "gu", "hao", "in", "jun", "ka", "li", "min",
             "na", "ou", "pa", "qi", "ra", "sa", "ta", "ul", "vi", "wei", "xi", "ya", "zhi"]


@dataclass(frozen=True)
class Scale:
    code_prefix: str
    nocs: int
    sports: int
    events_per_sport: int
    athletes: int
    days: int


SCALES = {
    "small": Scale("sm", nocs=6, sports=3, events_per_sport=3, athletes=180, days=3),
    "asian-games": Scale("ag", nocs=45, sports=40, events_per_sport=12, athletes=12_000, days=16),
}

class Ids:
    def __init__(self, games_code: str):
        self.code = games_code

    def __call__(self, kind: str, number) -> uuid.UUID:
        return uuid.uuid5(ID_SPACE, f"{self.code}:{kind}:{number}")


def games_code(scale: str, seed: int) -> str:
    return f"{SCALES[scale].code_prefix}{seed}"


def _name(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


class Generator:
    """Builds one Games in memory, then saves it with bulk inserts."""

    def __init__(self, scale: str, seed: int, progress=lambda message: None):
        self.scale = SCALES[scale]
        self.rng = random.Random(seed)
        self.code = games_code(scale, seed)
        self.ids = Ids(self.code)
        self.progress = progress
        self.starts_on = date(2026, 9, 19)

    def run(self) -> Games:
        with transaction.atomic():
            self.games = Games.objects.create(
                id=self.ids("games", 0), code=self.code,
                name=f"Asian Games (generated, {self.code})", starts_on=self.starts_on,
                ends_on=self.starts_on + timedelta(days=self.scale.days - 1),
            )
            self.nocs = self._nocs()
            self.athletes = self._athletes()
            self.progress(f"{len(self.athletes)} athletes")
            self.events = self._sports_and_events()
            self.progress(f"{len(self.events)} medal events")
            entries = self._entries()
            self.progress(f"{sum(map(len, entries.values()))} entries")
            fixtures = self._fixtures(entries)
            self.progress(f"{fixtures} fixtures")
            MedalStanding.objects.bulk_create(
                MedalStanding(id=self.ids("standing", noc.code), games=self.games, noc=noc) for noc in self.nocs
            )
            self._definitions()
        return self.games

    def _nocs(self) -> list[Noc]:
        nocs = []
        for code, name in NOCS[: self.scale.nocs]:
            noc, _ = Noc.objects.get_or_create(code=code, defaults={"name": name})
            nocs.append(noc)
        return nocs

    def _athletes(self) -> list[Athlete]:
        weights = [1.0 / (index + 2) for index in range(len(self.nocs))]  # big delegations first
        athletes = []
        for number in range(self.scale.athletes):
            athletes.append(Athlete(
                id=self.ids("athlete", number),
                given_name=_name(self.rng, 2), family_name=_name(self.rng, self.rng.randint(1, 3)),
                noc=self.rng.choices(self.nocs, weights)[0], gender="MW"[number % 2],
                birth_date=date(1985, 1, 1) + timedelta(days=self.rng.randrange(7000)),
                first_games=self.games,
            ))
        Athlete.objects.bulk_create(athletes, batch_size=2000)
        return athletes

    def _sports_and_events(self) -> list[MedalEvent]:
        events = []
        for s, sport_name in enumerate(SPORTS[: self.scale.sports]):
            sport = Sport.objects.create(id=self.ids("sport", s), games=self.games, code=f"S{s:02d}", name=sport_name)
            discipline = Discipline.objects.create(id=self.ids("discipline", s), sport=sport, code=f"D{s:02d}", name=sport_name)
            for e in range(self.scale.events_per_sport):
                gender = "MWX"[e % 3] if e % 5 else "X"
                is_team = e % 4 == 3
                events.append(MedalEvent(
                    id=self.ids("event", f"{s}-{e}"), games=self.games, discipline=discipline,
                    code=f"{sport.code}-{gender}-{e:02d}",
                    name=f"{'Men' if gender == 'M' else 'Women' if gender == 'W' else 'Mixed'}'s "
                         f"{sport_name} {'team ' if is_team else ''}event {e + 1}",
                    gender=gender, is_team=is_team, higher_is_better=self.rng.random() < 0.6,
                ))
        MedalEvent.objects.bulk_create(events)
        return events

    def _entries(self) -> dict:
        by_noc_gender = {}
        for athlete in self.athletes:
            by_noc_gender.setdefault((athlete.noc_id, athlete.gender), []).append(athlete)
        entries, teams, members = {}, [], []
        for event in self.events:
            rows = self._team_entries(event, by_noc_gender, teams, members) if event.is_team \
                else self._individual_entries(event, by_noc_gender)
            entries[event.pk] = rows
        Team.objects.bulk_create(teams, batch_size=2000)
        Team.members.through.objects.bulk_create(members, batch_size=5000)
        Entry.objects.bulk_create([e for rows in entries.values() for e in rows], batch_size=5000)
        return entries

    def _pool(self, event, by_noc_gender, noc) -> list:
        genders = "MW" if event.gender == "X" else event.gender
        return [a for g in genders for a in by_noc_gender.get((noc.pk, g), [])]

    def _individual_entries(self, event, by_noc_gender) -> list[Entry]:
        count = self.rng.randint(8, 32)
        rows, n = [], 0
        while len(rows) < count and n < count * 4:
            noc = self.nocs[n % len(self.nocs)]
            pool = self._pool(event, by_noc_gender, noc)
            n += 1
            if pool:
                athlete = self.rng.choice(pool)
                if all(r.athlete_id != athlete.pk for r in rows):
                    rows.append(Entry(id=self.ids("entry", f"{event.pk}-{athlete.pk}"), games=self.games,
                                      event=event, athlete=athlete, noc=athlete.noc))
        return rows

    def _team_entries(self, event, by_noc_gender, teams, members) -> list[Entry]:
        nocs = self.rng.sample(self.nocs, min(len(self.nocs), self.rng.randint(6, 16)))
        rows = []
        for noc in nocs:
            team = Team(id=self.ids("team", f"{event.pk}-{noc.code}"), games=self.games, noc=noc,
                        name=f"{noc.name} ({event.code})")
            teams.append(team)
            pool = self._pool(event, by_noc_gender, noc)
            for athlete in self.rng.sample(pool, min(len(pool), self.rng.randint(4, 12))):
                members.append(Team.members.through(team_id=team.pk, athlete_id=athlete.pk))
            rows.append(Entry(id=self.ids("entry", f"{event.pk}-{team.pk}"), games=self.games,
                              event=event, team=team, noc=noc))
        return rows

    def _fixtures(self, entries: dict) -> int:
        fixtures, competitors = [], []
        for index, event in enumerate(self.events):
            first_day = self.rng.randrange(max(1, self.scale.days - 3))
            plan = self._plan(event, entries[event.pk])
            for number, (phase, contenders, is_final) in enumerate(plan):
                day = min(self.scale.days - 1, first_day + (number * 3) // max(1, len(plan)) + (2 if is_final else 0))
                starts_at = datetime.combine(self.starts_on + timedelta(days=day), datetime.min.time(), UTC) \
                    + timedelta(hours=1 + (index + number) % 12, minutes=15 * (number % 4))
                fixture = Fixture(
                    id=self.ids("fixture", f"{event.pk}-{number}"), games=self.games, event=event, phase=phase,
                    is_medal_fixture=is_final, starts_at=starts_at, venue=f"{event.discipline.name} Arena",
                )
                fixtures.append(fixture)
                competitors.extend(Competitor(fixture=fixture, entry=e) for e in contenders)
        Fixture.objects.bulk_create(fixtures, batch_size=2000)
        Competitor.objects.bulk_create(competitors, batch_size=5000)
        return len(fixtures)

    def _plan(self, event, entries) -> list[tuple[str, list, bool]]:
        """Phases of an event: round-robin groups then a final (teams), heats then a final."""
        entries = list(entries)
        self.rng.shuffle(entries)
        if event.is_team:
            groups = [entries[i::max(1, len(entries) // 4)] for i in range(max(1, len(entries) // 4))]
            plan = [(f"Group {chr(65 + g)} match {m + 1}", [a, b], False)
                    for g, group in enumerate(groups)
                    for m, (a, b) in enumerate((x, y) for i, x in enumerate(group) for y in group[i + 1:])]
            return plan + [("Semifinal 1", entries[0:2], False), ("Semifinal 2", entries[2:4], False),
                           ("Final", entries[0:2], True)]
        heats = [entries[i:i + 8] for i in range(0, len(entries), 8)]
        plan = [(f"Heat {h + 1}", heat, False) for h, heat in enumerate(heats)] if len(heats) > 1 else []
        return plan + [("Final", [heat[0] for heat in heats] + entries[len(heats):8], True)]

    def _definitions(self) -> None:
        add_standard_definitions(self.games)


def delete_games(code: str) -> bool:
    """Remove a Games and everything built from it (raw SQL: the ORM's cascade is too slow)."""
    games = Games.objects.filter(code=code).first()
    if games is None:
        return False
    statements = [
        "DELETE FROM feed_dependency WHERE doc_key LIKE %(prefix)s",
        "DELETE FROM feeds_pendingbuild WHERE doc_key LIKE %(prefix)s",
        "DELETE FROM feeds_feedversion WHERE doc_key LIKE %(prefix)s",
        "DELETE FROM feeds_feeddocument WHERE games_id = %(id)s",
        "DELETE FROM games_statjob WHERE games_id = %(id)s",
        "DELETE FROM games_outbox WHERE games_id = %(id)s",
        "DELETE FROM games_competitor WHERE fixture_id IN (SELECT id FROM games_fixture WHERE games_id = %(id)s)",
        "DELETE FROM games_medalaward WHERE event_id IN (SELECT id FROM games_medalevent WHERE games_id = %(id)s)",
        "DELETE FROM games_fixture WHERE games_id = %(id)s",
        "DELETE FROM games_entry WHERE games_id = %(id)s",
        "DELETE FROM games_team_members WHERE team_id IN (SELECT id FROM games_team WHERE games_id = %(id)s)",
        "DELETE FROM games_team WHERE games_id = %(id)s",
        "DELETE FROM games_athlete a WHERE a.first_games_id = %(id)s"
        " AND NOT EXISTS (SELECT 1 FROM games_entry e WHERE e.athlete_id = a.id)"
        " AND NOT EXISTS (SELECT 1 FROM games_team_members m WHERE m.athlete_id = a.id)",
        "DELETE FROM games_medalstanding WHERE games_id = %(id)s",
        "DELETE FROM games_medalevent WHERE games_id = %(id)s",
        "DELETE FROM games_discipline WHERE sport_id IN (SELECT id FROM games_sport WHERE games_id = %(id)s)",
        "DELETE FROM games_sport WHERE games_id = %(id)s",
        "DELETE FROM games_games WHERE id = %(id)s",
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        for statement in statements[:4]:
            cursor.execute(statement, {"id": games.pk, "prefix": f"{code}/%"})
        # Few rows, many dependants in other apps (subscriptions, entitlements): let the ORM
        # cascade from here.
        FeedDefinition.objects.filter(games=games).delete()
        for statement in statements[4:]:
            cursor.execute(statement, {"id": games.pk, "prefix": f"{code}/%"})
    return True
