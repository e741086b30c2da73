"""Failed key attempts, limited per (client address, key prefix): guessing is refused, not slowed.

Failures are counted per minute in ``shared_counts``, so every API process shares the count
without a Redis call per failure. Once a (client address, key prefix) pair passes the limit,
its failing attempts are refused outright until that minute ends. A valid key is checked first
and always served: someone else's failures, from behind the same proxy or aimed at the same
key, never lock its owner out.

What is counted is bounded whoever sends what: the key prefix is a real key's public lookup id
(guessing that key is what gets counted); anything else, a made-up prefix or text that is no
key at all, is counted under one name per address. The counts last the minute they count, and
once MAX_PAIRS pairs have failed in one minute every further failure is refused until it ends
(a valid key is still served).
"""

from omnium import redis_keys
from omnium.conf import omnium_setting
from omnium.pullapi.shared_counts import SharedCounts

WINDOW_S = 60
SYNC_S = 0.5
MAX_PAIRS = 20_000
NO_SUCH_KEY = "no-such-key"  # the prefix counted for anything that is not a real key's


def _redis_key(pair: tuple[str, str], window: int) -> str:
    return redis_keys.failed_keys(*pair, window)


failures = SharedCounts(window_s=WINDOW_S, sync_s=SYNC_S, redis_key=_redis_key, max_keys=MAX_PAIRS)


def blocked(address: str, prefix: str) -> float | None:
    """Seconds until `address` may try `prefix` again, or None when it is not blocked."""
    if failures.total((address, prefix)) > omnium_setting("PULL_FAILED_KEYS_PER_MINUTE"):
        return failures.seconds_left()
    return None


def note_failure(address: str, prefix: str) -> float | None:
    """Count a failed attempt; seconds to wait when the pair is now over its limit (or when
    this minute's table of pairs is full)."""
    total = failures.add((address, prefix))
    if total is None or total > omnium_setting("PULL_FAILED_KEYS_PER_MINUTE"):
        return failures.seconds_left()
    return None
