"""Requests per second per client, across all API processes, without a Redis call per request.

The counts are ``shared_counts``' one-second windows, shared every SYNC_S: a request is refused
when the client's known total reaches its rate, so the limit is approximate by at most what the
processes serve in SYNC_S, which is what keeps the hot path free of Redis round trips (the read
path makes none either while its invalidation channel listens).
"""

import time

from rest_framework.throttling import BaseThrottle

from omnium import redis_keys
from omnium.conf import omnium_setting
from omnium.pullapi.catalogue import PullClient
from omnium.pullapi.shared_counts import SharedCounts

SYNC_S = 0.25

rates = SharedCounts(window_s=1, sync_s=SYNC_S, redis_key=redis_keys.client_rate)


def allow(client: PullClient) -> bool:
    """Whether this request of `client` is within PULL_CLIENT_RATE (and counts it if so)."""
    return rates.add_below(client.id, omnium_setting("PULL_CLIENT_RATE"))


class ClientRateThrottle(BaseThrottle):
    """PULL_CLIENT_RATE requests per second per client; staff sessions are not limited."""

    def allow_request(self, request, view):
        client = request.user
        if not isinstance(client, PullClient):
            return True
        return allow(client)

    def wait(self):
        return max(0.01, 1.0 - time.time() % 1.0)
