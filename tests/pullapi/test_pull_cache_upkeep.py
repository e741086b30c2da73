"""Pull files never freeze: every Games and entitlement shape gets its pull cache destination
by itself, and the read path leaves nothing in Redis that nothing will update."""

import pytest

from devtools.generator import Generator
from devtools.waiting import wait_until
from omnium import redis_keys
from omnium.clients.models import ApiKey, Client, Destination, Entitlement
from omnium.feeds.models import FeedDefinition, FeedDocument
from omnium.games import workflow
from omnium.games.models import Fixture
from omnium.pullapi import pull_cache_destinations, read_path
from omnium.pullapi.catalogue import holder
from omnium.pullapi.pull_cache_upkeep import repair_every_games
from omnium.pullapi.pull_redis import pull_redis
from tests import child_processes
from tests.conftest import ALL_QUEUES
from tests.pullapi.conftest import bearer

UPKEEP_ON = {"OMNIUM_PULL_CACHE_AUTOMATIC": "true", "OMNIUM_SWEEP_INTERVAL_S": 0.5,
             "OMNIUM_DELIVERY_LEASE_MARGIN_S": 5}


@pytest.fixture
def pipeline_with_upkeep(transactional_db, clean_redis, settings):
    """Build workers, a delivery worker and beat, with the pull cache upkeep on (off in other tests)."""
    settings.OMNIUM = {**settings.OMNIUM, "PULL_CACHE_AUTOMATIC": True}
    started = [child_processes.start_worker(ALL_QUEUES, "builds", **UPKEEP_ON),
               child_processes.start_delivery_worker("delivery", **UPKEEP_ON),
               child_processes.start_beat("beat", **UPKEEP_ON)]
    yield started
    for process in reversed(started):
        process.stop()


def calendar_seq(code: str) -> int | None:
    return FeedDocument.objects.filter(doc_key=f"{code}/calendar").values_list("seq", flat=True).first()


@pytest.mark.worker
def test_a_games_loaded_mid_event_and_an_xml_entitlement_serve_every_new_version(
        small_games, pipeline_with_upkeep, http):
    second = Generator("small", seed=11).run()  # loaded while the workers run: no manual step follows
    first_seq = wait_until(lambda: calendar_seq(second.code), 30, message="the new Games' files built")

    client = Client.objects.create(name="broadcaster", transform="xml")
    entitlement = Entitlement(client=client, definition=FeedDefinition.objects.get(games=second, feed_type="calendar"))
    entitlement.full_clean()
    entitlement.save()  # as the admin does
    _, key = ApiKey.issue(client, "production")
    holder.reload()
    own_shape = wait_until(lambda: Destination.objects.filter(
        client=client, name=pull_cache_destinations.OWN_SHAPE_DESTINATION).first(), 10)

    first = http.get(f"/v1/feeds/{second.code}/calendar", **bearer(key))
    assert first.status_code == 200 and first.content.lstrip().startswith(b"<")

    fixture = Fixture.objects.filter(games=second).order_by("starts_at", "id").first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 42})
    new_seq = wait_until(lambda: (calendar_seq(second.code) or 0) > first_seq and calendar_seq(second.code), 15)

    def pulled_again():
        reply = http.get(f"/v1/feeds/{second.code}/calendar", HTTP_IF_NONE_MATCH=first["ETag"], **bearer(key))
        return reply if reply.status_code == 200 else None

    newer = wait_until(pulled_again, 15, message="the pull client gets the new version, not a 304")
    assert newer["ETag"] != first["ETag"] and newer.content.lstrip().startswith(b"<")
    own_key = f"feed:{client.pk}:{client.shape.tag}:{second.code}/calendar"
    stored_version = int(pull_redis().hget(own_key, "v"))
    assert stored_version == new_seq and pull_redis().ttl(own_key) == -1, \
        "kept current by the own-shape destination, for good"
    assert own_shape.subscriptions.get(active=True, definition__feed_type="calendar").shape.transform == "xml"

    # Seed 002's key map: after builds, sends, heartbeats, pulls and a refused key, every key in
    # Redis (the pull cache shares the server here) is one that omnium.redis_keys names.
    assert http.get(f"/v1/feeds/{second.code}/calendar", HTTP_AUTHORIZATION="Bearer omk_wrongwrongwrong").status_code == 401
    found = {key.decode() for key in pull_redis().scan_iter(count=1000)}
    assert any(key.startswith("omnium:pull:failed-keys:") for key in found)
    assert any(key.startswith("omnium:worker:") for key in found)
    assert sorted(key for key in found if redis_keys.owner_of(key) is None) == []


def test_a_copy_the_read_path_puts_in_redis_expires_unless_a_destination_takes_it_over(small_games, clean_redis):
    """Without a destination for the key, the read path's copy is gone after PULL_FILL_TTL_S."""
    from omnium.pullapi.file_locations import FeedFileAddress

    path = read_path.ReadPath(memory_bytes=1 << 20, database_reads=1, missing_ttl_s=1, redis_retry_s=1,
                              fill_ttl_s=30)
    address = FeedFileAddress(f"{small_games.code}/calendar")
    path.read(address)

    assert 0 < pull_redis().ttl(address.redis_key) <= 30


def test_an_own_shape_entitlement_saved_in_the_admin_gets_its_destination_at_once(small_games, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_CACHE_AUTOMATIC": True}
    client = Client.objects.create(name="xml-client", transform="legacy")
    Entitlement.objects.create(client=client, definition=FeedDefinition.objects.get(games=small_games,
                                                                                    feed_type="medals"))

    destination = Destination.objects.get(client=client, name=pull_cache_destinations.OWN_SHAPE_DESTINATION)
    assert destination.subscriptions.get(definition__feed_type="medals").shape.transform == "legacy"
    assert Destination.objects.filter(name=pull_cache_destinations.SHARED_DESTINATION).exists()


def test_the_repair_task_sets_up_a_games_whose_hooks_were_missed(small_games):
    assert not Destination.objects.filter(name=pull_cache_destinations.SHARED_DESTINATION).exists()

    summary = repair_every_games()

    shared = Destination.objects.get(name=pull_cache_destinations.SHARED_DESTINATION)
    assert shared.subscriptions.filter(definition__games=small_games, definition__feed_type="calendar").exists()
    assert summary[small_games.code]["pull_files"] > 0


def test_a_new_games_is_owed_first_builds_in_the_bulk_lane_which_the_builders_make(small_games, clean_redis):
    from omnium.feeds import tasks as build_tasks
    from omnium.feeds.models import PendingBuild
    from omnium.pullapi import tasks
    from omnium.routing import BULK

    expected = set(pull_cache_destinations.pull_files_of(small_games))  # its standard files are built

    summary = tasks.prepare_pull_files(small_games.pk)

    pending = PendingBuild.objects.filter(lane=BULK)
    assert set(pending.values_list("doc_key", flat=True)) == expected == set(pull_cache_destinations.pull_files_of(
        small_games))
    assert summary["queued_first_builds"] == len(expected)
    assert not FeedDocument.objects.filter(doc_key__in=expected).exists(), "owed, not built inside the task"
    # The repair, every minute, notes nothing twice and leaves the pending builds as they are.
    generations = dict(pending.values_list("doc_key", "generation"))
    assert repair_every_games()[small_games.code]["queued_first_builds"] == 0
    assert dict(pending.values_list("doc_key", "generation")) == generations

    while build_tasks.build_due(BULK):
        pass

    assert FeedDocument.objects.filter(doc_key__in=expected).count() == len(expected)
    assert not PendingBuild.objects.exists()
