"""The read path: memory, then Redis, then PostgreSQL, for one requested file.

Steady state asks Redis nothing: a kept file that Redis confirmed stays current until Redis
names its key on the invalidation channel (invalidations.py), so a hit is served from memory.
A file not yet confirmed, or any file while the channel is down, costs one `HGET v`: same
version as the memory copy, serve the copy; a newer one, fetch the body once. Redis without
the key: one PostgreSQL read per file per process at a time (single-flight), at most
PULL_DATABASE_READS at once, then write-if-newer to Redis with the Redis destination's own
script, so this write can never replace a newer version the sender stored meanwhile. Redis
down: the memory copy with its age, else PostgreSQL (still limited). After a Redis failure,
Redis is left alone for PULL_REDIS_RETRY_S (or until the invalidation channel is back), so a
dead Redis costs no connect attempt per request.
"""

import logging
import threading
import time
from dataclasses import dataclass

import redis
from redis.exceptions import ReadOnlyError

from omnium.caching.memory_lru import ExpiringLru
from omnium.caching.single_flight import SingleFlight
from omnium.conf import omnium_setting
from omnium.encoding.compression import gzip_body
from omnium.encoding.pull_cache_entries import WRITE_IF_NEWER
from omnium.pullapi import change_notices
from omnium.pullapi.file_memory import CachedFile, FileMemory
from omnium.pullapi.invalidations import InvalidationListener, Invalidations
from omnium.pullapi.pull_redis import pull_redis
from omnium.transports.redis_servers import on_read_only

log = logging.getLogger(__name__)


class FileNotFound(LookupError):
    """Neither Redis nor PostgreSQL has the file."""


@dataclass(frozen=True, slots=True)
class Served:
    file: CachedFile
    stale_age_s: float | None = None  # set when Redis could not confirm the copy is current


@dataclass
class ReadStats:
    memory_hits: int = 0  # served without asking Redis (approximate: counted without a lock)
    version_checks: int = 0  # requests that asked Redis for the version or the file
    database_reads: int = 0
    redis_writes: int = 0


class ReadPath:
    def __init__(self, memory_bytes: int, database_reads: int, missing_ttl_s: float, redis_retry_s: float,
                 missing_max: int = 10_000, fill_ttl_s: int = 60):
        self.memory = FileMemory(memory_bytes)
        self.invalidations = Invalidations(self.memory)
        self.stats = ReadStats()
        self._listener: InvalidationListener | None = None
        self._flights = SingleFlight()
        self._database_slots = threading.BoundedSemaphore(database_reads)
        self._missing = ExpiringLru(missing_max, missing_ttl_s)  # redis keys PostgreSQL does not have
        self._fill_ttl_s = fill_ttl_s
        self._redis_retry_s = redis_retry_s
        self._redis_down_until = 0.0
        self._write_if_newer = None

    def read(self, address) -> Served:
        key = address.redis_key
        kept = self.memory.get(key)
        if self._is_hit(kept):
            return Served(kept)
        now = time.monotonic()
        # A listening channel proves Redis is back: no need to wait out the breaker.
        if now < self._redis_down_until and not self.invalidations.listening:
            return self._without_redis(address, kept)
        ticket = self.invalidations.ticket()  # before asking: a change after it is not missed
        try:
            current = self._current_in_redis(key, kept)
        except redis.RedisError:
            log.warning("pull cache Redis failed; serving from memory for %s s", self._redis_retry_s)
            self._redis_down_until = time.monotonic() + self._redis_retry_s
            return self._without_redis(address, kept)
        if current is None:
            return Served(self._from_database(address, write_to_redis=True))
        self.invalidations.confirm(current, ticket)
        return Served(current)

    def current_in_memory(self, key: str) -> CachedFile | None:
        """The kept file when Redis said it is current and has not named its key since: a
        hit, served without asking anyone."""
        kept = self.memory.get(key)
        return kept if self._is_hit(kept) else None

    def _is_hit(self, kept: CachedFile | None) -> bool:
        """Whether `kept` may be served without asking Redis; a hit is counted and dated."""
        if kept is None or kept.current_in != self.invalidations.generation:
            return False
        kept.confirmed_at = time.monotonic()
        self.stats.memory_hits += 1
        return True

    def _current_in_redis(self, key: str, kept: CachedFile | None) -> CachedFile | None:
        """The kept file if Redis holds no newer version, else Redis's; None when Redis has none."""
        self.stats.version_checks += 1
        if kept is None:
            return self._fetch(key)
        version = pull_redis().hget(key, "v")
        if version is None:
            return None
        if kept.version >= int(version):
            kept.confirmed_at = time.monotonic()
            return kept
        return self._fetch(key)

    def _fetch(self, key: str) -> CachedFile | None:
        """The whole file from Redis in one round trip; None when Redis does not have it."""
        version, etag, gz = pull_redis().hmget(key, ["v", "etag", "gz"])
        if version is None or gz is None:
            return None
        fetched = CachedFile(int(version), etag.decode(), gz)
        self.memory.put(key, fetched)
        return fetched

    def _without_redis(self, address, kept: CachedFile | None) -> Served:
        if kept is not None:
            return Served(kept, stale_age_s=time.monotonic() - kept.confirmed_at)
        return Served(self._from_database(address, write_to_redis=False))

    def _from_database(self, address, write_to_redis: bool) -> CachedFile:
        key = address.redis_key
        if key in self._missing:
            raise FileNotFound(key)
        found = self._flights.do(key, lambda: self._load(address, write_to_redis))
        if found is None:
            raise FileNotFound(key)
        return found

    def _load(self, address, write_to_redis: bool) -> CachedFile | None:
        if write_to_redis:
            # A flight that ended just before ours began (or another process) may have filled
            # Redis since we looked: one more round trip is far cheaper than a PostgreSQL read.
            fetched = self._fetch(address.redis_key)
            if fetched is not None:
                return fetched
        with self._database_slots:
            self.stats.database_reads += 1
            stored = address.load()
        if stored is None:
            self._missing.remember(address.redis_key)
            return None
        self._missing.forget(address.redis_key)
        file = CachedFile(stored.version, stored.etag, gzip_body(stored.body), plain=stored.body)
        if write_to_redis:
            self._store_if_newer(address.redis_key, file)
        self.memory.put(address.redis_key, file)
        return file

    def _store_if_newer(self, key: str, file: CachedFile) -> None:
        if self._write_if_newer is None:
            self._write_if_newer = pull_redis().register_script(WRITE_IF_NEWER)
        try:
            # Expiring: only a pull cache destination keeps a key for good (pull_cache_entries).
            self._write_if_newer(keys=[key], args=[file.version, file.etag, file.gz, self._fill_ttl_s])
            self.stats.redis_writes += 1
        except ReadOnlyError:  # a managed endpoint failed over: find the new primary next time
            on_read_only(pull_redis())
            log.warning("could not store %s in the pull cache: Redis answered READONLY", key)
        except redis.RedisError:
            log.warning("could not store %s in the pull cache", key, exc_info=True)

    def listen_for_invalidations(self, redis_url: str) -> None:
        """Start this process's invalidation channel (until it is up, every hit asks Redis)."""
        self._listener = InvalidationListener(redis_url, self.invalidations)
        self._listener.start()

    def stop_listening(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener.join(timeout=5)

    def health(self) -> dict:
        """This process's read path at a glance: is a hit free of Redis right now, and since when."""
        invalidations = self.invalidations
        return {
            "invalidations": "listening" if invalidations.listening else "down: every request asks Redis",
            "listening_since": invalidations.listening_since,
            "channel_breaks": invalidations.channel_breaks,
            "memory_hits": self.stats.memory_hits,
            "version_checks": self.stats.version_checks,
            "database_reads": self.stats.database_reads,
            "kept_files": len(self.memory),
            "kept_bytes": self.memory.used_bytes,
        }


_lock = threading.Lock()
_read_path: ReadPath | None = None


def read_path() -> ReadPath:
    global _read_path
    if _read_path is None:
        with _lock:
            if _read_path is None:
                made = ReadPath(
                    memory_bytes=int(omnium_setting("PULL_MEMORY_MB") * 1024 * 1024),
                    database_reads=omnium_setting("PULL_DATABASE_READS"),
                    missing_ttl_s=omnium_setting("PULL_MISSING_TTL_S"),
                    redis_retry_s=omnium_setting("PULL_REDIS_RETRY_S"),
                    missing_max=omnium_setting("PULL_MISSING_MAX"),
                    fill_ttl_s=omnium_setting("PULL_FILL_TTL_S"),
                )
                if change_notices.LISTEN_FOR_CHANGES:
                    made.listen_for_invalidations(omnium_setting("PULL_REDIS_URL"))
                _read_path = made
    return _read_path


def reset() -> None:
    """Forget every kept file and stop listening (tests; a process starts empty anyway)."""
    global _read_path
    with _lock:
        if _read_path is not None:
            _read_path.stop_listening()
        _read_path = None
