"""Replaying a day of a Games: realistic bursts of changes through the workflow commands.

A plan is made first (deterministic for a seed): for each fixture of the day, score updates
while it is live, then finish, official result and, for a medal fixture, the medals. Then the
plan is played against the wall clock, `speed` times faster than real time.
"""

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from omnium.games import workflow
from omnium.games.errors import WorkflowError
from omnium.games.models import Fixture, Games

MEDALS = ("gold", "silver", "bronze")


@dataclass(order=True)
class Step:
    at_s: float  # seconds after the start of the day (Games time)
    order: int
    action: str = field(compare=False)
    fixture_id: object = field(compare=False)
    payload: dict = field(compare=False, default_factory=dict)


def plan_day(games: Games, day: int, seed: int = 1) -> list[Step]:
    """Every change of day `day` (1 = the opening day), in time order."""
    rng = random.Random(f"{games.code}:{day}:{seed}")
    start = datetime.combine(games.starts_on + timedelta(days=day - 1), datetime.min.time(), UTC)
    fixtures = (
        Fixture.objects.filter(games=games, starts_at__gte=start, starts_at__lt=start + timedelta(days=1))
        .select_related("event").prefetch_related("competitors").order_by("starts_at", "id")
    )
    steps = []
    for fixture in fixtures:
        if fixture.status == Fixture.Status.SCHEDULED:
            steps.extend(_fixture_steps(fixture, (fixture.starts_at - start).total_seconds(), rng))
    for order, step in enumerate(sorted(steps, key=lambda s: s.at_s)):
        step.order = order
    return sorted(steps)


def _fixture_steps(fixture: Fixture, begins_s: float, rng: random.Random) -> list[Step]:
    entries = [c.entry_id for c in fixture.competitors.all()]
    if len(entries) < 1:
        return []
    team_match = fixture.event.is_team
    duration = rng.uniform(60, 110) * 60 if team_match else rng.uniform(5, 20) * 60
    updates = rng.randint(4, 12) if team_match else rng.randint(2, 5)
    scores = {entry: 0 for entry in entries}
    steps = []
    for n in range(updates):
        at = begins_s + duration * (n + 1) / (updates + 1)
        entry = rng.choice(entries)
        scores[entry] = scores[entry] + 1 if team_match else round(rng.uniform(10, 60), 3)
        steps.append(Step(at, 0, "record_score", fixture.pk, {"scores": {entry: scores[entry]}}))
    final_scores = {e: (s if team_match or s else round(rng.uniform(10, 60), 3)) for e, s in scores.items()}
    steps.append(Step(begins_s + duration, 0, "record_score", fixture.pk, {"scores": final_scores}))
    steps.append(Step(begins_s + duration + 1, 0, "finish_fixture", fixture.pk))
    steps.append(Step(begins_s + duration + 600, 0, "make_official", fixture.pk))
    if fixture.is_medal_fixture:
        steps.append(Step(begins_s + duration + 900, 0, "award_medals", fixture.pk))
    return steps


def _award(fixture_id) -> None:
    fixture = Fixture.objects.get(pk=fixture_id)
    podium = fixture.competitors.exclude(rank=None).order_by("rank", "entry_id")[: len(MEDALS)]
    workflow.award_medals(fixture.event_id, {p.entry_id: MEDALS[i] for i, p in enumerate(podium)})


ACTIONS = {
    "record_score": lambda step: workflow.record_score(step.fixture_id, step.payload["scores"]),
    "finish_fixture": lambda step: workflow.finish_fixture(step.fixture_id),
    "make_official": lambda step: workflow.make_official(step.fixture_id),
    "award_medals": lambda step: _award(step.fixture_id),
}


@dataclass
class ReplayReport:
    steps_planned: int = 0
    steps_played: int = 0
    refused: int = 0
    by_action: Counter = field(default_factory=Counter)
    wall_seconds: float = 0.0
    games_seconds: float = 0.0

    def as_dict(self) -> dict:
        return {
            "steps_planned": self.steps_planned, "steps_played": self.steps_played, "refused": self.refused,
            "by_action": dict(self.by_action), "wall_seconds": round(self.wall_seconds, 2),
            "games_seconds_covered": round(self.games_seconds),
            "changes_per_second": round(self.steps_played / self.wall_seconds, 1) if self.wall_seconds else 0,
        }


def play(steps: list[Step], speed: float, max_seconds: float | None = None, progress=None) -> ReplayReport:
    """Play `steps` `speed` times faster than real time, for at most `max_seconds` of wall time."""
    report = ReplayReport(steps_planned=len(steps))
    if not steps:
        return report
    origin_s, started = steps[0].at_s, time.monotonic()
    for step in steps:
        due = (step.at_s - origin_s) / speed
        if max_seconds is not None and due > max_seconds:
            break
        time.sleep(max(0.0, due - (time.monotonic() - started)))
        try:
            ACTIONS[step.action](step)
            report.by_action[step.action] += 1
            report.steps_played += 1
        except WorkflowError:
            report.refused += 1
        report.games_seconds = step.at_s - origin_s
        if progress and report.steps_played % 100 == 0:
            progress(report)
    report.wall_seconds = time.monotonic() - started
    return report
