"""Failed key attempts, limited per source address (key guessing is refused, not slowed).

Failures are counted in Redis per address per minute, so every API process shares the
count. A process that sees an address pass the limit refuses it outright, valid key or
not, until that minute ends. Only failures touch Redis: a client with a valid key costs
one dictionary look-up here.
"""

import threading
import time

import redis

from omnium.conf import omnium_setting
from omnium.pullapi.pull_redis import pull_redis

WINDOW_S = 60

_blocked: dict[str, float] = {}  # address -> blocked until (epoch seconds)
_lock = threading.Lock()


def blocked(address: str) -> float | None:
    """Seconds until `address` may try again, or None when it is not blocked."""
    until = _blocked.get(address)
    if until is None:
        return None
    remaining = until - time.time()
    if remaining > 0:
        return remaining
    with _lock:
        _blocked.pop(address, None)
    return None


def note_failure(address: str) -> float | None:
    """Count a failed attempt; seconds to wait when the address is now over its limit."""
    window = int(time.time() // WINDOW_S)
    key = f"omnium:pull:failed-keys:{address}:{window}"
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
        _blocked[address] = until
    return until - time.time()
