"""Failed key attempts, limited per (client address, key prefix): guessing is refused, not slowed.

Failures are counted in Redis per minute, so every API process shares the count. Once a
(client address, key prefix) pair passes the limit, its failing attempts are refused outright
until that minute ends. A valid key is checked first and always served: someone else's
failures, from behind the same proxy or aimed at the same key, never lock its owner out.
The key prefix is the key's public lookup id, so guessing one client's key is what gets
counted; a made-up prefix names no key at all. Only failures touch Redis.
"""

import threading
import time

import redis

from omnium import redis_keys
from omnium.conf import omnium_setting
from omnium.pullapi.pull_redis import pull_redis

WINDOW_S = 60

_blocked: dict[tuple[str, str], float] = {}  # (client address, key prefix) -> blocked until (epoch s)
_lock = threading.Lock()


def blocked(address: str, prefix: str) -> float | None:
    """Seconds until `address` may try `prefix` again, or None when it is not blocked."""
    until = _blocked.get((address, prefix))
    if until is None:
        return None
    remaining = until - time.time()
    if remaining > 0:
        return remaining
    with _lock:
        _blocked.pop((address, prefix), None)
    return None


def note_failure(address: str, prefix: str) -> float | None:
    """Count a failed attempt; seconds to wait when the pair is now over its limit."""
    window = int(time.time() // WINDOW_S)
    key = redis_keys.failed_keys(address, prefix, window)
    try:
        pipe = pull_redis().pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, WINDOW_S * 2)
        failures = pipe.execute()[0]
    except redis.RedisError:
        return None  # no shared count without Redis; keys are still checked
    if failures <= omnium_setting("PULL_FAILED_KEYS_PER_MINUTE"):
        return None
    until = (window + 1) * WINDOW_S
    with _lock:
        _blocked[(address, prefix)] = until
    return until - time.time()
