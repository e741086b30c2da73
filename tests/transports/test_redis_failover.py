"""The Redis destination when its primary changes: behind a managed endpoint (one address,
the server behind it moves) and behind Redis Sentinel (the URL names the Sentinels)."""

from __future__ import annotations

import pytest
import redis

from devtools.loopback.hosts import MovingEndpoint
from devtools.private_redis import PrivateRedis
from devtools.sentinel_redis import SentinelRedis
from omnium.transports import TransportError
from omnium.transports.failures import Reason
from omnium.transports.redis import RedisTransport
from omnium.transports.redis_servers import SentinelUrl, nodes_named_by_sentinels, sentinel_url
from tests.child_processes import LOG_DIR

from .kits import feed_path

KEY_PREFIX = "feed:"


def _send(transport: RedisTransport, path: str, version: int) -> None:
    transport.send(b'{"v": %d}' % version, path, content_type="application/json", version=version,
                   etag=f"e{version}")


def _version_on(port: int, path: str) -> int | None:
    stored = redis.Redis("127.0.0.1", port).hget(KEY_PREFIX + path, "v")
    return None if stored is None else int(stored)


@pytest.fixture
def primary_and_replica():
    primary = PrivateRedis("endpoint-primary", LOG_DIR)
    replica = PrivateRedis("endpoint-replica", LOG_DIR, more_arguments=("--replicaof", "127.0.0.1", str(primary.port)))
    yield primary, replica
    replica.stop()
    primary.stop()


@pytest.mark.servers
def test_behind_a_managed_endpoint_a_failover_costs_one_transient_failure(primary_and_replica):
    primary, replica = primary_and_replica
    endpoint = MovingEndpoint(primary.port)
    transport = RedisTransport({"url": f"redis://127.0.0.1:{endpoint.port}/0", "key_prefix": KEY_PREFIX}, {})
    path = feed_path()
    try:
        _send(transport, path, 1)
        # The provider's failover: the replica is promoted, the old primary follows it (alive,
        # read-only now), and the endpoint moves; our pooled connection still reaches the old one.
        redis.Redis("127.0.0.1", replica.port).replicaof("NO", "ONE")
        redis.Redis("127.0.0.1", primary.port).replicaof("127.0.0.1", replica.port)
        endpoint.move_to(replica.port)

        with pytest.raises(TransportError) as refused:
            _send(transport, path, 2)
        _send(transport, path, 3)  # the sender's retry
    finally:
        transport.close()
        endpoint.stop()

    assert not refused.value.permanent and refused.value.reason == Reason.OTHER, str(refused.value)
    assert "READONLY" in str(refused.value)
    assert _version_on(replica.port, path) == 3, "the retry reached the new primary"


@pytest.fixture
def sentinel_redis():
    cluster = SentinelRedis("transport-sentinel", log_dir=LOG_DIR)
    yield cluster
    cluster.stop()


@pytest.mark.servers
def test_behind_sentinel_sends_go_to_the_primary_it_names_before_and_after_a_failover(sentinel_redis):
    transport = RedisTransport({"url": sentinel_redis.url, "key_prefix": KEY_PREFIX, "connect_timeout": 0.5}, {})
    path = feed_path()
    try:
        _send(transport, path, 1)
        assert _version_on(sentinel_redis.primary_port(), path) == 1
        new_port = sentinel_redis.wait_for_failover(sentinel_redis.kill_primary())
        _send(transport, path, 2)  # the pooled connection is dead: a new one asks the Sentinels
    finally:
        transport.close()

    assert _version_on(new_port, path) == 2


@pytest.mark.servers
def test_the_sentinels_name_every_node_of_the_service(sentinel_redis):
    named = nodes_named_by_sentinels(sentinel_redis.url)

    assert named == {("127.0.0.1", node.port) for node in sentinel_redis.nodes}


def test_a_sentinel_url_names_sentinels_service_database_and_credentials():
    assert sentinel_url("rediss+sentinel://api:s%40cret@a.example:26380,b.example,[::1]:26379/pull/2") == SentinelUrl(
        sentinels=(("a.example", 26380), ("b.example", 26379), ("::1", 26379)), service="pull", db=2,
        username="api", password="s@cret", tls=True)


@pytest.mark.parametrize(("url", "says"), [
    ("redis+sentinel://a.example:26379", "name the service"),
    ("redis+sentinel://a.example:26379/pull/zero", "name the service"),
    ("redis+sentinel://a.example:port/pull", "is not host:port"),
    ("redis+sentinel://a.example:26379,/pull", "at least one Sentinel"),
])
def test_a_wrong_sentinel_url_says_what_is_wrong(url, says):
    with pytest.raises(ValueError, match=says):
        sentinel_url(url)
    assert any(says in problem for problem in RedisTransport.validate_config({"url": url}))
