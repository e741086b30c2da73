"""Requests per second per client, across all API processes, without a Redis call per request.

Each process counts its own requests per client in one-second windows and, at most every
SYNC_S, adds them to the shared per-client count in Redis (INCRBY) and reads the total back.
A request is refused when the last known total plus this process's not yet shared count
reaches the client's rate. The count is therefore approximate by at most what the processes
serve in SYNC_S, which is what keeps the hot path free of Redis round trips (the read path
makes none either while its invalidation channel listens). Without Redis the limit falls back to each process's own count.
"""

import threading
import time
from collections import defaultdict

import redis
from rest_framework.throttling import BaseThrottle

from omnium import redis_keys
from omnium.conf import omnium_setting
from omnium.pullapi.catalogue import PullClient
from omnium.pullapi.pull_redis import pull_redis

SYNC_S = 0.25


class SharedRates:
    def __init__(self):
        self._window = 0
        self._unshared: defaultdict[int, int] = defaultdict(int)
        self._shared: dict[int, int] = {}
        self._shared_at = 0.0
        self._sync_lock = threading.Lock()

    def allow(self, client_id: int, rate: float) -> bool:
        now = time.time()
        window = int(now)
        if window != self._window:
            self._window, self._unshared, self._shared = window, defaultdict(int), {}
        if self._shared.get(client_id, 0) + self._unshared[client_id] >= rate:
            return False
        self._unshared[client_id] += 1
        if now - self._shared_at >= SYNC_S:
            self._share(window, now)
        return True

    def _share(self, window: int, now: float) -> None:
        if not self._sync_lock.acquire(blocking=False):
            return  # another thread is sharing right now
        try:
            self._shared_at = now
            counts, self._unshared = self._unshared, defaultdict(int)
            pipe = pull_redis().pipeline(transaction=False)
            for client_id, count in counts.items():
                pipe.incrby(redis_keys.client_rate(client_id, window), count)
                pipe.expire(redis_keys.client_rate(client_id, window), 5)
            totals = pipe.execute()[::2]
            if window == self._window:
                self._shared.update(zip(counts, totals))
        except redis.RedisError:
            pass  # keep counting locally; the read path reports Redis trouble
        finally:
            self._sync_lock.release()


rates = SharedRates()


def allow(client: PullClient) -> bool:
    """Whether this request of `client` is within PULL_CLIENT_RATE (and counts it if so)."""
    return rates.allow(client.id, omnium_setting("PULL_CLIENT_RATE"))


class ClientRateThrottle(BaseThrottle):
    """PULL_CLIENT_RATE requests per second per client; staff sessions are not limited."""

    def allow_request(self, request, view):
        client = request.user
        if not isinstance(client, PullClient):
            return True
        return allow(client)

    def wait(self):
        return max(0.01, 1.0 - time.time() % 1.0)
