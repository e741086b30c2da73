"""One Redis connection pool per process, for hints, wake-ups and caches (never for truth).

REDIS_URL may name one server or a Sentinel-watched primary (``omnium.redis_servers``)."""

from functools import cache

import redis
from django.conf import settings

from omnium.transports.redis_servers import redis_for


@cache
def _client(url: str) -> redis.Redis:
    return redis_for(url, socket_connect_timeout=2, socket_timeout=2, health_check_interval=30)


def redis_client() -> redis.Redis:
    return _client(settings.REDIS_URL)
