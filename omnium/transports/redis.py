"""Push into the Redis pull cache: the pull API's fast copy of every feed file."""

from __future__ import annotations

import hashlib

import redis
from redis.backoff import NoBackoff
from redis.driver_info import DriverInfo
from redis.exceptions import AuthorizationError, NoPermissionError, OutOfMemoryError, ReadOnlyError
from redis.retry import Retry

from omnium.caching.memory_lru import ByteBoundedLru
from omnium.encoding.compression import gzip_body
from omnium.encoding.pull_cache_entries import WRITE_IF_NEWER

from .base import TIMEOUT_SETTINGS, Deadline, FeedFile, Receipt, Setting, Transport, TransportError
from .failures import Reason, reason_of_os_error
from .probes import ProbeSteps, probe_file_name
from .redis_servers import is_sentinel_url, on_read_only, redis_for, sentinel_url
from .urls import userinfo_problem

# A reply no retry can change (the key holds something else). Permission and credential
# refusals arrive as exception classes (see _failure).
PERMANENT_REPLIES = ("WRONGTYPE",)


def _url_problem(url: str) -> str | None:
    # unix:// is refused: a socket file on the worker's host is never a destination.
    if is_sentinel_url(url):
        try:
            sentinel_url(url)
        except ValueError as exc:
            return str(exc)
    elif not url.startswith(("redis://", "rediss://")):
        return "must start with redis://, rediss:// or redis+sentinel://"
    return userinfo_problem(url)


# Gzipped bodies by the body's digest: several Redis destinations take the same version at
# the same moment, so each process compresses a new version once.
_gzipped_bodies = ByteBoundedLru(32 * 1024 * 1024)


def _gzipped(body: bytes) -> bytes:
    """gzip of `body`, made once per body."""
    digest = hashlib.blake2b(body, digest_size=16).digest()
    return _gzipped_bodies.get_or_make(digest, lambda: gzip_body(body))


# What each new connection tells the server about its client (CLIENT SETINFO), made once:
# redis-py otherwise reads its own version from the installed package's metadata for every
# connection, and a fan-out opens one per Redis destination and process (3 % of the delivery
# workers' Python time, py-spy on bench/scale.py).
DRIVER_INFO = DriverInfo()


class RedisTransport(Transport):
    """Stores ``v`` (version), ``etag`` and ``gz`` (the gzipped body) in one hash at
    ``key_prefix + path``. A refused stale write is a success: the receipt then says
    "kept newer v=M", because the cache already holds something at least as new."""

    kind = "redis"
    label = "Redis pull cache"
    # The pull cache takes every new version of every file of a Games, most of them a few KB:
    # one round trip for many of them, rather than a sender's whole cycle for each (measured
    # on 500 owed fixture files: 6.4-8.0 ms a file one by one).
    files_per_push = 64
    config_schema = {
        **TIMEOUT_SETTINGS,
        "url": Setting(str, default="redis://127.0.0.1:6379/0", check=_url_problem,
                       help="redis://host:port/db, or redis+sentinel://host:26379,…/service/db for the "
                            "pull cache (user name and password go in the credentials)"),
        "key_prefix": Setting(str, default="feed:", help="Prefix of every key written."),
    }
    credentials_bound_to = ("url",)
    credentials_schema = {
        "username": Setting(str, help="ACL user name, if any."),
        "password": Setting(str, help="Password, if any."),
    }

    address_setting = "url"

    def __init__(self, config: dict, credentials: dict):
        super().__init__(config, credentials)
        self._client = redis_for(
            self.config["url"],
            username=self.credentials.get("username"),
            password=self.credentials.get("password"),
            socket_connect_timeout=self.config["connect_timeout"],
            socket_timeout=self.config["send_timeout"],
            max_connections=4,
            driver_info=DRIVER_INFO,
            # One quick retry covers a pooled connection the server dropped while idle (or a
            # primary Sentinel has replaced); more (redis-py backs off for seconds by default)
            # would only eat into the deadline.
            retry=Retry(NoBackoff(), 1),
        )
        self._pool = self._client.connection_pool
        self._write_if_newer = self._client.register_script(WRITE_IF_NEWER)

    def push(self, file: FeedFile, deadline: Deadline) -> Receipt:
        key = self.config["key_prefix"] + file.path
        packed = _gzipped(file.body)
        deadline.before_commit("redis")  # write-if-newer also keeps an older version out
        try:
            reply = self._write_if_newer(keys=[key], args=[file.version, file.etag, packed])
        except redis.RedisError as exc:
            raise self._failure(exc) from exc
        return self._receipt(reply, packed)

    def push_many(self, files: list[FeedFile], deadline: Deadline) -> list[Receipt | TransportError]:
        packed = [_gzipped(file.body) for file in files]
        pipe = self._client.pipeline(transaction=False)
        for file, gz in zip(files, packed, strict=True):
            self._write_if_newer(keys=[self.config["key_prefix"] + file.path], args=[file.version, file.etag, gz],
                                 client=pipe)
        deadline.before_commit("redis")
        try:
            replies = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            raise self._failure(exc) from exc
        return [self._failure(reply) if isinstance(reply, Exception) else self._receipt(reply, gz)
                for reply, gz in zip(replies, packed, strict=True)]

    def delete_keys(self, keys: list[str]) -> None:
        """Delete keys this destination wrote (keys it no longer owns: delivery's key clean-up),
        under a send's deadline and address policy: nothing reaches a host a send may not."""
        with self.deadline():
            try:
                self._client.delete(*keys)
            except redis.RedisError as exc:
                raise self._failure(exc) from exc

    @staticmethod
    def _receipt(reply, packed: bytes) -> Receipt:
        stored, version = reply
        if stored:
            return Receipt(f"stored v={version}", remote_bytes=len(packed))
        return Receipt(f"kept newer v={version}")

    def probe(self, steps: ProbeSteps, deadline: Deadline) -> None:
        # A hidden name after the prefix: the pull API never asks for it. It expires by
        # itself should the removal never come.
        key = self.config["key_prefix"] + probe_file_name()
        client = redis.Redis(connection_pool=self._pool)
        with steps.step(f"connect, log in and write a test key {key}", failure=self._failure):
            client.set(key, b"omnium connection test", px=60_000)
        with steps.step("remove the test key", failure=self._failure):
            client.delete(key)

    def _failure(self, exc: BaseException) -> TransportError:
        if isinstance(exc, ReadOnlyError):
            # A managed endpoint failed over and our connections still reach the old primary,
            # a replica now: drop them all, so the next send connects to the new one.
            on_read_only(self._client)
            return TransportError(f"Redis answered READONLY (a replica now, after a failover?): {exc}",
                                  reason=Reason.OTHER)
        if isinstance(exc, redis.AuthenticationError | AuthorizationError):
            return TransportError(f"Redis refused our credentials: {exc}", permanent=True,
                                  reason=Reason.AUTH_REFUSED)
        # redis-py turns the replies it knows into exception classes, and strips their code
        # ("NOPERM …" arrives as NoPermissionError("this user has no permissions…")).
        if isinstance(exc, NoPermissionError):
            return TransportError(f"Redis refused: {exc}", permanent=True, reason=Reason.PERMISSION_DENIED)
        if isinstance(exc, OutOfMemoryError):
            return TransportError(f"Redis refused: {exc}", reason=Reason.DISK_FULL)
        if isinstance(exc, redis.ResponseError):
            permanent = str(exc).startswith(PERMANENT_REPLIES)
            return TransportError(f"Redis refused: {exc}", permanent=permanent, reason=Reason.OTHER)
        connected = "connecting" not in str(exc).lower()
        reason = reason_of_os_error(exc, connected=connected)
        seconds = self.config["send_timeout" if connected else "connect_timeout"]
        return TransportError(f"Redis unreachable: {exc}", reason=reason, seconds=seconds)

    def close(self) -> None:
        self._pool.disconnect()
