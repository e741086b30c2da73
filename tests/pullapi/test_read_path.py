import gzip
import threading

import pytest
import redis

from omnium.feeds.models import FeedDocument
from omnium.pullapi.addresses import FeedFileAddress
from omnium.pullapi.file_memory import CachedFile, FileMemory
from omnium.pullapi.read_path import read_path
from omnium.transports.redis import RedisTransport
from tests.pullapi.conftest import bearer, fill_pull_cache


@pytest.fixture
def redis_commands(monkeypatch):
    """Every Redis round trip this process makes (real Redis; we only write them down)."""
    seen = []
    send = redis.Redis.execute_command
    execute = redis.client.Pipeline.execute

    def command(self, *args, **options):
        seen.append(args[0])
        return send(self, *args, **options)

    def pipeline(self, *args, **options):
        seen.append("PIPELINE")
        return execute(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", command)
    monkeypatch.setattr(redis.client.Pipeline, "execute", pipeline)
    return seen


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
        transport = RedisTransport({"url": _pull_redis_url(), "key_prefix": "feed:"}, {})
        transport.send(b'{"newer": true}', self.doc_key, content_type="application/json",
                       version=stored.version + 1000, etag="newer")
        return stored


def _pull_redis_url():
    from omnium.conf import omnium_setting

    return omnium_setting("PULL_REDIS_URL")


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
    transport = RedisTransport({"url": _pull_redis_url(), "key_prefix": "feed:"}, {})
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
