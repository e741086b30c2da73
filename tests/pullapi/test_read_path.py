import gzip
import threading
import time

import psycopg

from omnium.feeds.models import FeedDocument
from omnium.pullapi.file_locations import FeedFileAddress
from omnium.pullapi.file_memory import CachedFile, FileMemory
from omnium.pullapi.invalidations import Invalidations
from omnium.pullapi.read_path import read_path
from omnium.transports.redis import RedisTransport
from tests import child_processes
from tests.pullapi.conftest import bearer, fill_pull_cache, pull_redis_url, wait_until


def test_steady_state_makes_no_database_query_and_one_redis_round_trip(
        games, entitle, http, django_assert_num_queries, redis_commands):
    _, key = entitle("acme", games, "medals")
    fill_pull_cache()
    path = f"/v1/feeds/{games.code}/medals"
    http.get(path, **bearer(key))  # the first read fetches the body once
    http.get(path, **bearer(key))  # (and shares the client's request count with the others)
    redis_commands.clear()
    with django_assert_num_queries(0):
        response = http.get(path, **bearer(key))
    assert response.status_code == 200
    assert redis_commands == ["HGET"]


def test_hundred_concurrent_requests_for_a_file_missing_from_redis_make_one_database_read(
        games, entitle, clean_redis):
    from django.db import connection
    from django.test import Client as HttpClient

    _, key = entitle("acme", games, "calendar")
    doc_key = f"{games.code}/calendar"
    assert not clean_redis.exists(f"feed:{doc_key}")
    start = threading.Barrier(100)
    statuses = []

    def pull():
        start.wait()
        try:
            statuses.append(HttpClient().get(f"/v1/feeds/{doc_key}", **bearer(key)).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=pull) for _ in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 100
    assert read_path().stats.database_reads == 1
    seq = FeedDocument.objects.get(doc_key=doc_key).seq
    assert int(clean_redis.hget(f"feed:{doc_key}", "v")) == seq  # written back for every other process


class RacedAddress(FeedFileAddress):
    """A PostgreSQL read that the sender overtakes: while we hold version N, it stores N+1000."""

    def load(self):
        stored = super().load()
        transport = RedisTransport({"url": pull_redis_url(), "key_prefix": "feed:"}, {})
        transport.send(b'{"newer": true}', self.doc_key, content_type="application/json",
                       version=stored.version + 1000, etag="newer")
        return stored


def test_stale_write_to_redis_never_replaces_a_newer_version(games, clean_redis):
    doc_key = f"{games.code}/medals"
    served = read_path().read(RacedAddress(doc_key))
    current = FeedDocument.objects.get(doc_key=doc_key)
    assert served.file.version == current.seq  # this request got what PostgreSQL had...
    stored = clean_redis.hgetall(f"feed:{doc_key}")
    assert int(stored[b"v"]) == current.seq + 1000  # ...but Redis keeps the newer version
    assert gzip.decompress(stored[b"gz"]) == b'{"newer": true}'
    assert read_path().read(FeedFileAddress(doc_key)).file.version == current.seq + 1000


def test_new_version_in_redis_is_fetched_once_then_served_from_memory(games, clean_redis, redis_commands):
    doc_key = f"{games.code}/medals"
    address = FeedFileAddress(doc_key)
    first = read_path().read(address).file
    transport = RedisTransport({"url": pull_redis_url(), "key_prefix": "feed:"}, {})
    transport.send(b'{"v": 2}', doc_key, content_type="application/json", version=first.version + 1, etag="two")
    redis_commands.clear()
    assert read_path().read(address).file.plain == b'{"v": 2}'
    assert read_path().read(address).file.etag == "two"
    assert redis_commands == ["HGET", "HMGET", "HGET"]


def test_file_memory_is_bounded_and_drops_the_least_recently_used():
    memory = FileMemory(limit_bytes=250)
    for name in "abc":
        memory.put(name, CachedFile(1, name, b"x" * 100))
    assert memory.get("a") is None and memory.get("b") is not None and memory.used_bytes == 200
    memory.put("d", CachedFile(1, "d", b"x" * 100))  # b was used last, so c goes
    assert memory.get("c") is None and memory.get("b") is not None
    memory.put("huge", CachedFile(1, "huge", b"x" * 1000))
    assert memory.get("huge") is None and memory.used_bytes <= 250


# --- the invalidation channel: a hit asks Redis nothing, a change is known at once ---------


def _store_new_version(doc_key: str, version: int, body: bytes) -> None:
    """What a Redis destination does when a new version of the file is built."""
    transport = RedisTransport({"url": pull_redis_url(), "key_prefix": "feed:"}, {})
    transport.send(body, doc_key, content_type="application/json", version=version, etag=f"etag-{version}")


def test_steady_state_hit_asks_neither_redis_nor_the_database(
        listening, games, entitle, http, django_assert_num_queries, redis_commands):
    _, key = entitle("acme", games, "medals")
    fill_pull_cache()
    path = f"/v1/feeds/{games.code}/medals"
    http.get(path, **bearer(key))  # fetches the body once, and Redis confirms it is current
    redis_commands.clear()
    with django_assert_num_queries(0):
        responses = [http.get(path, **bearer(key)) for _ in range(3)]
    assert [r.status_code for r in responses] == [200] * 3
    assert redis_commands == []


def test_new_version_in_redis_is_served_within_100_ms_then_from_memory(listening, games, redis_commands):
    doc_key = f"{games.code}/medals"
    address = FeedFileAddress(doc_key)
    first = read_path().read(address).file
    read_path().read(address)
    _store_new_version(doc_key, first.version + 1, b'{"v": 2}')
    took = wait_until(lambda: read_path().read(address).file.version == first.version + 1, "the new version")
    assert took < 0.1

    def served_from_memory() -> bool:
        # An invalidation that lands just after the new version was confirmed (seen once, with
        # three other test processes on two cores) makes the next request ask Redis once more:
        # a confirmation an invalidation may have overtaken is never trusted. Then memory serves.
        redis_commands.clear()
        served = read_path().read(address).file.plain
        return served == b'{"v": 2}' and redis_commands == []

    wait_until(served_from_memory, "served from memory, asking Redis nothing", timeout=1.0)


def test_change_during_a_version_check_is_not_trusted():
    invalidations = Invalidations(FileMemory(limit_bytes=10_000))
    invalidations.channel_up()
    file = CachedFile(1, "one", b"x")
    invalidations.memory.put("feed:a", file)
    ticket = invalidations.ticket()  # a request asks Redis...
    invalidations.changed([b"feed:a"])  # ...and the key changes before it confirms the answer
    invalidations.confirm(file, ticket)
    assert file.current_in != invalidations.generation
    invalidations.confirm(file, invalidations.ticket())
    assert file.current_in == invalidations.generation
    invalidations.changed([b"feed:a"])
    assert file.current_in != invalidations.generation


def test_nothing_confirmed_before_a_channel_break_is_trusted_after_it():
    invalidations = Invalidations(FileMemory(limit_bytes=10_000))
    invalidations.channel_up()
    file = CachedFile(1, "one", b"x")
    invalidations.confirm(file, invalidations.ticket())
    ticket_before_break = invalidations.ticket()
    invalidations.channel_down()
    assert file.current_in != invalidations.generation
    invalidations.confirm(file, ticket_before_break)  # an answer that was in flight during the break
    invalidations.channel_up()
    assert file.current_in != invalidations.generation
    assert invalidations.channel_breaks == 1


def test_redis_flush_forgets_every_confirmation(listening, games, clean_redis, redis_commands):
    address = FeedFileAddress(f"{games.code}/medals")
    read_path().read(address)
    read_path().read(address)
    clean_redis.flushdb()
    wait_until(lambda: listening.generation >= 2, "the flush is known")
    redis_commands.clear()
    read_path().read(address)  # Redis lost the file: PostgreSQL, written back to Redis
    assert redis_commands[0] == "HGET"


def test_cut_invalidation_channel_falls_back_to_asking_redis_then_comes_back(
        listening, games, clean_redis, redis_commands):
    doc_key = f"{games.code}/medals"
    address = FeedFileAddress(doc_key)
    first = read_path().read(address).file
    read_path().read(address)
    clean_redis.client_kill_filter(_id=read_path()._listener.client_id)
    wait_until(lambda: not listening.listening, "the cut is noticed", timeout=1.0)
    assert read_path().health()["invalidations"].startswith("down")
    _store_new_version(doc_key, first.version + 1, b'{"v": 2}')
    redis_commands.clear()
    assert read_path().read(address).file.version == first.version + 1  # no push came: Redis was asked
    assert redis_commands[0] == "HGET"
    wait_until(lambda: listening.listening, "the channel is back", timeout=3.0)
    assert listening.channel_breaks == 1
    read_path().read(address)  # confirmed once more in the new generation
    redis_commands.clear()
    assert read_path().read(address).file.version == first.version + 1
    assert redis_commands == []


def test_read_path_health_is_for_staff_only_and_says_whether_hits_ask_redis(games, entitle, http, admin_client):
    _, key = entitle("acme", games, "medals")
    assert http.get("/v1/health/read-path", **bearer(key)).status_code == 403
    health = admin_client.get("/v1/health/read-path", HTTP_ACCEPT="application/json").json()
    assert health["invalidations"] == "down: every request asks Redis"  # no listener in this process


def test_files_missing_from_redis_are_read_from_postgresql_at_most_four_at_a_time(games, entitle, clean_redis):
    """Seed 000 (pull reading 3): on Redis misses an API process reads PostgreSQL for at most
    PULL_DATABASE_READS (4) files at once, whatever the number of requests. The table is locked
    from another connection so the reads pile up where PostgreSQL counts them."""
    from django.db import connection
    from django.test import Client as HttpClient

    feed_types = ("country", "calendar", "medals", "results", "entries", "participants")
    _, key = entitle("acme", games, *feed_types)
    paths = [f"/v1/feeds/{doc_key}" for doc_key in FeedDocument.objects.filter(
        games=games, feed_type__in=feed_types).values_list("doc_key", flat=True)]
    assert len(paths) >= 10
    statuses = []

    def pull(path):
        try:
            statuses.append(HttpClient().get(path, **bearer(key)).status_code)
        finally:
            connection.close()

    locker = psycopg.connect(child_processes.database_url(), autocommit=False)
    watcher = psycopg.connect(child_processes.database_url(), autocommit=True)
    try:
        locker.execute("LOCK TABLE feeds_feeddocument IN ACCESS EXCLUSIVE MODE")
        threads = [threading.Thread(target=pull, args=(path,)) for path in paths]
        for thread in threads:
            thread.start()

        def file_reads_waiting() -> int:
            return watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
                " AND query LIKE 'SELECT seq, content_hash, body FROM feeds_feeddocument%%'").fetchone()[0]

        wait_until(lambda: file_reads_waiting() >= 4, "four file reads waiting on the lock", 10)
        time.sleep(0.5)  # time for a fifth to join them, if the cap let it
        assert file_reads_waiting() == 4
        locker.rollback()  # the lock goes: the reads proceed
        for thread in threads:
            thread.join(20)
    finally:
        locker.close()
        watcher.close()
    assert statuses == [200] * len(paths)
    assert read_path().stats.database_reads == len(paths)

