"""Counts per key in fixed windows, shared by every API process through Redis, without a Redis
call per count.

Each process counts on its own and, at most every ``sync_s``, adds what it counted since to
the shared counts in Redis (one pipeline of INCRBY for all its keys) and reads the totals
back. A key's total is the last shared total read plus what this process has not shared yet,
so it is exact within a process and behind the other processes by at most ``sync_s``. The
counts live only as long as their window: the whole table is dropped when the window ends,
and at most ``max_keys`` keys are counted in one window, so nothing grows without bound
whoever sends what. Without Redis, each process goes on with its own counts.

Used for a client's requests per second (``throttles``) and for failed keys per client
address and key prefix per minute (``failed_keys``).
"""

import threading
import time
from collections.abc import Callable, Hashable

import redis

from omnium.pullapi.pull_redis import pull_redis


class SharedCounts:
    def __init__(self, window_s: int, sync_s: float, redis_key: Callable[[Hashable, int], str],
                 max_keys: int = 100_000):
        self.window_s = window_s
        self.sync_s = sync_s
        self.max_keys = max_keys
        self._redis_key = redis_key  # (key, window number) -> its Redis key
        self._sync_lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        self._window = 0
        self._counted: set[Hashable] = set()  # every key counted in this window
        self._unshared: dict[Hashable, int] = {}
        self._shared: dict[Hashable, int] = {}
        self._shared_at = 0.0

    def total(self, key: Hashable) -> int:
        """The count of ``key`` in this window, across processes as far as known."""
        self._roll(time.time())
        return self._shared.get(key, 0) + self._unshared.get(key, 0)

    def add(self, key: Hashable) -> int | None:
        """Count one for ``key``; its total then, or None when this window already counts
        ``max_keys`` other keys (the caller decides what a full table means)."""
        now = time.time()
        self._roll(now)
        return self._add(key, now)

    def add_below(self, key: Hashable, limit: float) -> bool:
        """Count one for ``key`` unless its total has reached ``limit``; whether it was under.
        (A rate check on the pull API's hot path: one clock read, one roll.)"""
        now = time.time()
        self._roll(now)
        if self._shared.get(key, 0) + self._unshared.get(key, 0) >= limit:
            return False
        self._add(key, now)  # a full table counts no more, and refuses nothing
        return True

    def _add(self, key: Hashable, now: float) -> int | None:
        if key not in self._counted:
            if len(self._counted) >= self.max_keys:
                return None
            self._counted.add(key)
        self._unshared[key] = self._unshared.get(key, 0) + 1
        total = self._shared.get(key, 0) + self._unshared[key]
        if now - self._shared_at >= self.sync_s:
            self._share(now)
        return total

    def keys_counted(self) -> int:
        return len(self._counted)

    def seconds_left(self) -> float:
        """Until this window ends."""
        return self.window_s - time.time() % self.window_s

    def _roll(self, now: float) -> None:
        window = int(now // self.window_s)
        if window != self._window:
            self._window, self._counted, self._unshared, self._shared = window, set(), {}, {}

    def _share(self, now: float) -> None:
        if not self._sync_lock.acquire(blocking=False):
            return  # another thread is sharing right now
        try:
            self._shared_at = now
            window, counts, self._unshared = self._window, self._unshared, {}
            totals = self._send(window, counts)
            if window == self._window:
                self._shared.update(totals)
        finally:
            self._sync_lock.release()

    def _send(self, window: int, counts: dict[Hashable, int]) -> dict[Hashable, int]:
        """Add ``counts`` to Redis; the totals it answers, or this process's own without it."""
        expire_s = 2 * self.window_s + 3
        try:
            pipe = pull_redis().pipeline(transaction=False)
            for key, count in counts.items():
                pipe.incrby(self._redis_key(key, window), count)
                pipe.expire(self._redis_key(key, window), expire_s)
            return dict(zip(counts, pipe.execute()[::2]))
        except redis.RedisError:  # the read path reports Redis trouble
            return {key: self._shared.get(key, 0) + count for key, count in counts.items()}
