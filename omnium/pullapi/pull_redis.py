"""The pull cache's Redis connection, one pool per process, with short timeouts.

No retries and short timeouts: on the hot path a slow answer is worse than no answer, since
the memory copy can be served at once (read_path's circuit breaker takes it from there).
OMNIUM_PULL_REDIS_URL may name one server, a managed endpoint or a Sentinel-watched primary
(``omnium.redis_servers``).
"""

import threading

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from omnium.conf import omnium_setting
from omnium.transports.redis_servers import redis_for

_lock = threading.Lock()
_clients: dict[str, redis.Redis] = {}


def pull_redis() -> redis.Redis:
    url = omnium_setting("PULL_REDIS_URL")
    client = _clients.get(url)
    if client is None:
        with _lock:
            client = _clients.setdefault(url, redis_for(
                url, socket_connect_timeout=0.5, socket_timeout=1.0, retry=Retry(NoBackoff(), 0),
                max_connections=256,
            ))
    return client
