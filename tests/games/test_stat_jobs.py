"""Stat jobs: run on their lane by real workers, retried, then failed with an alert."""

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from devtools.generator import Generator
from devtools.waiting import wait_until
from omnium.alerts.models import Alert
from omnium.games import statjobs, workflow
from omnium.games.models import MedalEvent, MedalStanding, OutboxEntry, StatJob
from omnium.games.stats import STATS


@pytest.fixture
def games(transactional_db):
    return Generator("small", seed=5).run()


def award_gold_to_the_winner(event):
    final = event.fixtures.get(is_medal_fixture=True)
    workflow.record_score(final.pk, {c.entry_id: 10 + n for n, c in enumerate(final.competitors.all())})
    workflow.finish_fixture(final.pk)
    winner = final.competitors.get(rank=1).entry
    workflow.award_medals(event.pk, {winner.pk: "gold"})
    return final, winner


@pytest.mark.worker
def test_awarding_medals_updates_the_medal_standings_through_a_worker(games, worker):
    event = MedalEvent.objects.filter(games=games).first()
    _, winner = award_gold_to_the_winner(event)

    wait_until(lambda: StatJob.objects.filter(state="done").exists(), 10, message="stat job done")

    standing = MedalStanding.objects.get(games=games, noc=winner.noc)
    assert (standing.gold, standing.rank) == (1, 1)
    change = OutboxEntry.objects.get(action="stat:medal_standings")
    assert ["medal_standing", str(standing.pk)] in change.records


def test_running_a_stat_job_twice_has_one_effect(games):
    event = MedalEvent.objects.filter(games=games).first()
    award_gold_to_the_winner(event)
    job = StatJob.objects.get()

    assert statjobs.run(job.pk) == "done"
    assert statjobs.run(job.pk) == "skipped"
    assert OutboxEntry.objects.filter(action="stat:medal_standings").count() == 1


@override_settings(OMNIUM={**settings.OMNIUM, "STAT_JOB_RETRY_S": 0.01})
def test_a_stat_job_that_keeps_failing_opens_one_alert_naming_stat_and_fixture(games, monkeypatch):
    def broken_stat(games, job):
        raise ArithmeticError("medal count does not add up")

    monkeypatch.setitem(STATS, "medal_standings", broken_stat)
    event = MedalEvent.objects.filter(games=games).first()
    final, _ = award_gold_to_the_winner(event)
    job = StatJob.objects.get()

    outcomes = []
    for _ in range(3):
        wait_until(lambda: StatJob.objects.get(pk=job.pk).run_after <= timezone.now(), 2)
        outcomes.append(statjobs.run(job.pk))

    assert outcomes == ["retry", "retry", "failed"]
    alert = Alert.objects.get(kind="stat_job_failed", resolved_at__isnull=True)
    assert alert.subject == f"medal_standings:fixture={final.pk}"
    assert "medal count does not add up" in alert.message and games.code in alert.message
    assert StatJob.objects.get(pk=job.pk).state == "failed"


@pytest.mark.worker
def test_a_backfill_never_sits_in_front_of_a_live_match(games, clean_redis):
    from django.db import transaction

    from omnium.routing import BACKFILL, LIVE, LIVE_QUEUES
    from tests import child_processes

    with transaction.atomic():
        backfill = [statjobs.enqueue(games, "medal_standings", BACKFILL) for _ in range(30)]
    event = MedalEvent.objects.filter(games=games).first()
    award_gold_to_the_winner(event)  # the live job, queued after the backfill
    live_job = StatJob.objects.get(lane=LIVE)

    worker = child_processes.start_worker(LIVE_QUEUES, "live-only")
    try:
        wait_until(lambda: StatJob.objects.get(pk=live_job.pk).state == "done", 10, message="live job done")
    finally:
        worker.stop()
    assert StatJob.objects.filter(pk__in=[j.pk for j in backfill], state="pending").count() == 30
