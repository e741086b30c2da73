"""Bounded everything: each growing table has a retention task on beat, Redis keys go with what
they belong to, and the pull API's memory of missing files has a ceiling."""

import importlib
from datetime import timedelta

import pytest
import redis
from django.utils import timezone

from omnium import redis_keys, routing
from omnium.alerts.models import Alert
from omnium.alerts.tasks import prune_resolved_alerts
from omnium.caching.memory_lru import ExpiringLru
from omnium.clients.models import Destination, Subscription
from omnium.delivery import health, heartbeats
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryAttempt, DeliveryState
from omnium.delivery.tasks import prune_attempts
from omnium.feeds.builder import build_file
from omnium.feeds.models import FeedDocument, FeedVersion
from omnium.feeds.tasks import prune_feed_versions
from omnium.games import workflow
from omnium.games.models import Fixture, StatJob
from omnium.games.tasks import prune_finished_stat_jobs
from omnium.pullapi import read_path
from tests.delivery.fixtures import redis_destination_settings
from tests.transports.kits import REDIS_TEST_URL

LONG_AGO = timezone.now() - timedelta(days=400)


def new_calendar_version(games) -> int:
    fixture = Fixture.objects.filter(games=games).order_by("starts_at", "id").first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 5})
    return build_file(f"{games.code}/calendar").seq


def test_old_feed_versions_are_pruned_but_every_current_version_is_kept(small_games):
    replaced = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar").seq
    current = new_calendar_version(small_games)
    FeedVersion.objects.update(committed_at=LONG_AGO)

    assert prune_feed_versions() == 1

    kept = set(FeedVersion.objects.values_list("seq", flat=True))
    assert replaced not in kept and current in kept
    assert kept == set(FeedDocument.objects.values_list("seq", flat=True)), "the current version of every file"


def test_a_replaced_feed_version_inside_the_window_is_kept(small_games):
    new_calendar_version(small_games)
    assert prune_feed_versions() == 0


def test_resolved_alerts_older_than_the_window_are_pruned_open_and_unannounced_ones_kept(transactional_db):
    old_resolved = Alert.objects.create(kind="k", subject="a", message="m", resolved_at=LONG_AGO,
                                        resolution_sent_at=LONG_AGO)
    unannounced = Alert.objects.create(kind="k", subject="b", message="m", resolved_at=LONG_AGO)
    recent = Alert.objects.create(kind="k", subject="c", message="m", resolved_at=timezone.now(),
                                  resolution_sent_at=timezone.now())
    still_open = Alert.objects.create(kind="k", subject="d", message="m")
    Alert.objects.update(opened_at=LONG_AGO)

    assert prune_resolved_alerts() == 1
    assert set(Alert.objects.values_list("pk", flat=True)) == {unannounced.pk, recent.pk, still_open.pk}
    assert not Alert.objects.filter(pk=old_resolved.pk).exists()


def test_finished_stat_jobs_are_pruned_failed_and_waiting_ones_kept(small_games):
    def job(state, finished_at=None):
        return StatJob.objects.create(games=small_games, stat="medals", lane="live", state=state,
                                      finished_at=finished_at)

    done_long_ago = job(StatJob.State.DONE, LONG_AGO)
    kept = {job(StatJob.State.DONE, timezone.now()).pk, job(StatJob.State.FAILED, LONG_AGO).pk,
            job(StatJob.State.PENDING).pk}

    assert prune_finished_stat_jobs() == 1
    assert set(StatJob.objects.values_list("pk", flat=True)) == kept
    assert not StatJob.objects.filter(pk=done_long_ago.pk).exists()


def test_delivery_attempts_older_than_the_window_are_pruned(small_games, subscribe):
    destination = subscribe(small_games, redis_destination_settings())
    sender.drain(destination.pk)
    sender.drain(destination.pk)
    recent = DeliveryAttempt.objects.get(destination=destination)
    old = DeliveryAttempt.objects.create(destination=destination, doc_key="x", seq=1)
    DeliveryAttempt.objects.filter(pk=old.pk).update(started_at=LONG_AGO)

    assert prune_attempts() == 1
    assert list(DeliveryAttempt.objects.values_list("pk", flat=True)) == [recent.pk]


@pytest.mark.parametrize("name,task", sorted(routing.RETENTION_TASKS.items()))
def test_every_retention_task_runs_on_beat_and_exists(name, task, settings):
    schedule = routing.beat_schedule()
    assert schedule[name]["task"] == task
    assert schedule[name]["schedule"] == settings.OMNIUM["PRUNE_INTERVAL_S"]
    module, function = task.rsplit(".", 1)
    assert callable(getattr(importlib.import_module(module), function))


def published_key(destination) -> str:
    state = DeliveryState.objects.get(destination=destination)
    return destination.config["key_prefix"] + state.sent_path


def test_a_deleted_redis_destination_takes_its_keys_and_health_with_it(small_games, subscribe, clean_redis):
    destination = subscribe(small_games, redis_destination_settings())
    sender.drain(destination.pk)
    health.beat(heartbeats.WorkerHeartbeat("this-test"), frozenset({destination.pk}))  # publishes the success
    key = published_key(destination)
    pull_cache = redis_client_at(REDIS_TEST_URL)
    assert pull_cache.exists(key) and clean_redis.exists(redis_keys.destination_health(destination.pk))

    Destination.objects.get(pk=destination.pk).delete()

    assert not pull_cache.exists(key)
    assert not clean_redis.exists(redis_keys.destination_health(destination.pk))


def test_a_retired_subscription_takes_its_keys_with_it(small_games, subscribe):
    destination = subscribe(small_games, redis_destination_settings())
    sender.drain(destination.pk)
    key = published_key(destination)
    subscription = Subscription.objects.get(destination=destination)

    subscription.active = False
    subscription.save()

    assert not redis_client_at(REDIS_TEST_URL).exists(key)


def redis_client_at(url) -> redis.Redis:
    return redis.Redis.from_url(url)


class UnknownFile:
    def __init__(self, number: int):
        self.redis_key = f"feed:xx/fixture/{number}"

    def load(self):
        return None


def test_the_memory_of_missing_files_stays_bounded_under_100000_distinct_unknown_ids():
    path = read_path.ReadPath(memory_bytes=1 << 20, database_reads=1, missing_ttl_s=60, redis_retry_s=1,
                              missing_max=1000)
    for number in range(100_000):
        with pytest.raises(read_path.FileNotFound):
            path._from_database(UnknownFile(number), write_to_redis=False)

    assert len(path._missing) == 1000
    assert UnknownFile(99_999).redis_key in path._missing, "the most recent are remembered"


def test_a_missing_file_is_forgotten_after_its_time_to_live():
    now = [0.0]
    missing = ExpiringLru(limit=10, ttl_s=2.0, clock=lambda: now[0])
    missing.remember("feed:a")
    assert "feed:a" in missing
    now[0] = 2.5
    assert "feed:a" not in missing and len(missing) == 0
