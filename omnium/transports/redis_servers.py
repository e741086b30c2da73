"""Which Redis server a URL means: one server, or the primary that Redis Sentinel names.

A plain ``redis://`` or ``rediss://`` URL is one server, or a managed endpoint whose name moves
to the new primary on failover: its clients reconnect on a lost connection (a new connect
resolves the name again) and on ``READONLY`` (the old primary, now a replica, refused a
write: ``on_read_only`` drops every pooled connection so the next one finds the new primary).

``redis+sentinel://`` (``rediss+sentinel://`` for TLS to the data nodes) names the Sentinels and
the service they watch::

    redis+sentinel://[user:password@]host:26379[,host:26379…]/service[/db]

The user name and password are those of the data nodes; Sentinels are asked without one.
redis-py's documented Sentinel client asks them for the primary at every new connection and
drops its connections when the primary moves, or when the old one answers READONLY.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import redis
from redis.sentinel import Sentinel

SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}  # scheme: TLS to the data nodes
SENTINEL_PORT = 26379


@dataclass(frozen=True)
class SentinelUrl:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False


def is_sentinel_url(url: str) -> bool:
    return urlsplit(url).scheme in SENTINEL_SCHEMES


def sentinel_url(url: str) -> SentinelUrl:
    """The parts of a ``redis+sentinel://`` URL; a ValueError says what is wrong with it."""
    parts = urlsplit(url)
    if parts.scheme not in SENTINEL_SCHEMES:
        raise ValueError(f"a Sentinel URL starts with {' or '.join(s + '://' for s in SENTINEL_SCHEMES)}")
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    path = [step for step in parts.path.split("/") if step]
    if not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ValueError("name the service Sentinel watches, and optionally the database: …/service[/db]")
    return SentinelUrl(
        sentinels=tuple(_host_and_port(host) for host in hosts.split(",")),
        service=unquote(path[0]), db=int(path[1]) if len(path) == 2 else 0,
        username=unquote(username) or None, password=unquote(password) or None,
        tls=SENTINEL_SCHEMES[parts.scheme])


def _host_and_port(text: str) -> tuple[str, int]:
    if not text:
        raise ValueError("name at least one Sentinel as host:port")
    host, colon, port = text.rpartition(":") if not text.endswith("]") else (text, "", "")
    if not colon:
        host, port = text, str(SENTINEL_PORT)
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r} is not host:port")
    return host.strip("[]"), int(port)


def redis_for(url: str, **options) -> redis.Redis:
    """A client of the server ``url`` means, with redis-py's connection ``options`` (which win
    over what the URL says)."""
    if not is_sentinel_url(url):
        return redis.Redis.from_url(url, **options)
    watched = sentinel_url(url)
    timeouts = {name: value for name, value in options.items() if name.startswith("socket_")}
    sentinels = Sentinel(watched.sentinels, sentinel_kwargs=timeouts)
    from_url = {"db": watched.db, "username": watched.username, "password": watched.password, "ssl": watched.tls}
    return sentinels.master_for(watched.service, **{**from_url, **options})


def nodes_named_by_sentinels(url: str, timeout: float = 0.5) -> set[tuple[str, int]]:
    """Every node the Sentinels of ``url`` know for its service (primary and replicas), from
    the first Sentinel that answers; empty when none does."""
    watched = sentinel_url(url)
    for host, port in watched.sentinels:
        sentinel = redis.Redis(host, port, socket_connect_timeout=timeout, socket_timeout=timeout)
        try:
            primary = sentinel.sentinel_master(watched.service)
            replicas = sentinel.sentinel_slaves(watched.service)
        except redis.RedisError:
            continue
        finally:
            sentinel.close()
        return {(primary["ip"], int(primary["port"]))} | {(r["ip"], int(r["port"])) for r in replicas}
    return set()


def on_read_only(client: redis.Redis) -> None:
    """A write met READONLY: the server behind a managed endpoint is a replica now. Drop every
    pooled connection, so the next connect resolves the endpoint again and finds the primary.
    (A Sentinel-managed pool has already asked the Sentinels again.)"""
    client.connection_pool.disconnect()
