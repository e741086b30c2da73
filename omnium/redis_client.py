"""One Redis connection pool per process, for hints, wake-ups and caches (never for truth)."""

from functools import cache

import redis
from django.conf import settings


@cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2, health_check_interval=30)


def redis_client() -> redis.Redis:
    return _client(settings.REDIS_URL)
