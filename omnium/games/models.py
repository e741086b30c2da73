"""The saved sports records of a Games.

Every record that a feed file is built from has a UUID id (it is what `feed_dependency`
points at) and a `changed_at` that moves only when the record's content really changes:
a file's "last updated" is the newest `changed_at` inside it, so a no-op edit must not move it.
"""

import uuid

from django.db import models
from django.db.models import Func, Q


class ClockTimestamp(Func):
    """PostgreSQL's clock_timestamp(): the wall clock now, not the transaction's start."""

    function = "clock_timestamp"
    template = "clock_timestamp()"
    output_field = models.DateTimeField()


class CurrentXactId(Func):
    """pg_current_xact_id(): the id of the writing transaction, compared against snapshots."""

    template = "pg_current_xact_id()"
    output_field = models.TextField()


class XactIdField(models.Field):
    """A PostgreSQL xid8; read back as its text form."""

    def db_type(self, connection):
        return "xid8"

    def from_db_value(self, value, expression, connection):
        return None if value is None else str(value)


class Record(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    changed_at = models.DateTimeField(db_default=ClockTimestamp())

    class Meta:
        abstract = True


class Games(Record):
    code = models.SlugField(max_length=32, unique=True)
    name = models.CharField(max_length=200)
    starts_on = models.DateField()
    ends_on = models.DateField()

    class Meta:
        verbose_name_plural = "games"

    def __str__(self):
        return f"{self.code} ({self.name})"


class Noc(Record):
    """A National Olympic Committee: the country a competitor represents."""

    code = models.CharField(max_length=3, unique=True)
    name = models.CharField(max_length=100)

    class Meta:
        verbose_name = "NOC"

    def __str__(self):
        return self.code


class Sport(Record):
    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="sports")
    code = models.CharField(max_length=8)
    name = models.CharField(max_length=100)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["games", "code"], name="sport_code_per_games")]

    def __str__(self):
        return self.name


class Discipline(Record):
    sport = models.ForeignKey(Sport, on_delete=models.CASCADE, related_name="disciplines")
    code = models.CharField(max_length=8)
    name = models.CharField(max_length=100)

    def __str__(self):
        return self.name


class Athlete(Record):
    """A person. Not tied to one Games, so a career spans several."""

    given_name = models.CharField(max_length=80)
    family_name = models.CharField(max_length=80)
    noc = models.ForeignKey(Noc, on_delete=models.PROTECT, related_name="athletes")
    gender = models.CharField(max_length=1, choices=[("M", "Men"), ("W", "Women")])
    birth_date = models.DateField()
    # The Games at which the athlete was first accredited (their career may span several).
    first_games = models.ForeignKey("Games", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="first_accredited")

    def __str__(self):
        return f"{self.family_name.upper()} {self.given_name}"


class Team(Record):
    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="teams")
    noc = models.ForeignKey(Noc, on_delete=models.PROTECT, related_name="teams")
    name = models.CharField(max_length=120)
    members = models.ManyToManyField(Athlete, related_name="teams", blank=True)

    def __str__(self):
        return self.name


class MedalEvent(Record):
    """A medal event ("unit"): one set of medals, e.g. Men's 100 m."""

    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="medal_events")
    discipline = models.ForeignKey(Discipline, on_delete=models.CASCADE, related_name="events")
    code = models.CharField(max_length=40)
    name = models.CharField(max_length=120)
    gender = models.CharField(max_length=1, choices=[("M", "Men"), ("W", "Women"), ("X", "Mixed")])
    is_team = models.BooleanField(default=False)
    # Higher score wins (goals, points) or lower wins (times).
    higher_is_better = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["games", "code"], name="event_code_per_games")]

    def __str__(self):
        return self.name


class Entry(Record):
    """A competitor (an athlete or a team) entered in a medal event."""

    class Status(models.TextChoices):
        ENTERED = "entered"
        WITHDRAWN = "withdrawn"

    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="entries")
    event = models.ForeignKey(MedalEvent, on_delete=models.CASCADE, related_name="entries")
    athlete = models.ForeignKey(Athlete, null=True, blank=True, on_delete=models.PROTECT)
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.PROTECT)
    noc = models.ForeignKey(Noc, on_delete=models.PROTECT, related_name="entries")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ENTERED)

    class Meta:
        verbose_name_plural = "entries"
        constraints = [
            models.CheckConstraint(
                condition=Q(athlete__isnull=True) ^ Q(team__isnull=True),
                name="entry_is_athlete_xor_team",
            ),
        ]

    @property
    def competitor_name(self) -> str:
        return str(self.team or self.athlete)


class Fixture(Record):
    """One contest on the schedule: a heat, a match, a final."""

    class Status(models.TextChoices):
        SCHEDULED = "scheduled"
        LIVE = "live"
        FINISHED = "finished"

    class ResultStatus(models.TextChoices):
        NONE = "none"
        PROVISIONAL = "provisional"
        OFFICIAL = "official"

    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="fixtures")
    event = models.ForeignKey(MedalEvent, on_delete=models.CASCADE, related_name="fixtures")
    phase = models.CharField(max_length=60)
    is_medal_fixture = models.BooleanField(default=False)
    starts_at = models.DateTimeField()
    venue = models.CharField(max_length=120)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SCHEDULED)
    result_status = models.CharField(
        max_length=12, choices=ResultStatus.choices, default=ResultStatus.NONE
    )

    class Meta:
        indexes = [models.Index(fields=["games", "starts_at"])]

    def __str__(self):
        return f"{self.event.name} – {self.phase}"


class Competitor(models.Model):
    """An entry's place in a fixture, with its score and rank. Part of its fixture's record."""

    fixture = models.ForeignKey(Fixture, on_delete=models.CASCADE, related_name="competitors")
    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="competitions")
    score = models.DecimalField(max_digits=12, decimal_places=3, null=True, blank=True)
    rank = models.PositiveSmallIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["fixture", "entry"], name="one_place_per_entry"),
        ]


class MedalAward(Record):
    class Medal(models.TextChoices):
        GOLD = "gold"
        SILVER = "silver"
        BRONZE = "bronze"

    event = models.ForeignKey(MedalEvent, on_delete=models.CASCADE, related_name="awards")
    entry = models.ForeignKey(Entry, on_delete=models.CASCADE, related_name="awards")
    medal = models.CharField(max_length=6, choices=Medal.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["event", "entry"], name="one_medal_per_entry"),
        ]


class MedalStanding(Record):
    """One NOC's line in the medal table; recomputed by the medal-standings stat job."""

    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="medal_standings")
    noc = models.ForeignKey(Noc, on_delete=models.PROTECT, related_name="medal_standings")
    gold = models.PositiveIntegerField(default=0)
    silver = models.PositiveIntegerField(default=0)
    bronze = models.PositiveIntegerField(default=0)
    rank = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["games", "noc"], name="one_standing_per_noc"),
        ]

    @property
    def total(self) -> int:
        return self.gold + self.silver + self.bronze


class OutboxEntry(models.Model):
    """What changed: written in the same transaction as the change itself.

    `records` names every record the change touched as [kind, id] pairs; the feed builder
    maps them to files through `feed_dependency`. Readers select rows that are not yet
    handled (never "id greater than my cursor", which skips a transaction that commits
    late), and mark them handled in the same transaction as their effect.
    """

    id = models.BigAutoField(primary_key=True)
    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="outbox")
    action = models.CharField(max_length=40)
    lane = models.CharField(max_length=10)
    records = models.JSONField()
    created_at = models.DateTimeField(db_default=ClockTimestamp())
    xact_id = XactIdField(db_default=CurrentXactId())
    handled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "games_outbox"
        verbose_name_plural = "outbox entries"
        indexes = [
            models.Index(fields=["id"], name="outbox_unhandled", condition=Q(handled_at__isnull=True)),
        ]


class StatJob(models.Model):
    """A durable stat computation, e.g. a Games' medal standings after a unit's result.

    Claimed with a conditional UPDATE, retried `STAT_JOB_ATTEMPTS` times, then failed with an
    open alert naming the stat and the fixture.
    """

    class State(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    games = models.ForeignKey(Games, on_delete=models.CASCADE, related_name="stat_jobs")
    stat = models.CharField(max_length=40)
    lane = models.CharField(max_length=10)
    fixture = models.ForeignKey(Fixture, null=True, blank=True, on_delete=models.SET_NULL)
    event = models.ForeignKey(MedalEvent, null=True, blank=True, on_delete=models.SET_NULL)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    run_after = models.DateTimeField(db_default=ClockTimestamp())
    claimed_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(db_default=ClockTimestamp())
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["lane", "run_after"],
                name="statjob_waiting",
                condition=Q(state__in=["pending", "running"]),
            ),
        ]
