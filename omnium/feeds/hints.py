"""Post-commit hints that start builds early. Losing one is harmless: the sweeper covers it.

Wake-ups are deduplicated per lane in Redis: a wake-up is scheduled only if none is already
set for an earlier time, so a burst of changes does not flood the queue with timers.
"""

import logging
import threading
import time

from celery import current_app
from django.dispatch import receiver
from redis.exceptions import RedisError

from omnium import redis_keys
from omnium.games.signals import changes_committed
from omnium.messaging import hints
from omnium.redis_client import redis_client
from omnium.routing import BUILD_DUE, HANDLE_CHANGES, build_queue

log = logging.getLogger(__name__)

# KEYS[1] = wake key; ARGV = wake time, now (unix s), expiry (ms).
# Returns 1 if the caller should schedule a wake-up at the given time.
CLAIM_WAKE = """
local current = tonumber(redis.call('GET', KEYS[1]))
local at, now = tonumber(ARGV[1]), tonumber(ARGV[2])
if current and current <= at and current > now then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return 1
"""


@receiver(changes_committed)
def _handle_changes_soon(sender, lane, **kwargs):
    """After a save (in a request, often): from the hint thread, so the save never waits."""
    hints.send_soon("a handle_changes hint", lambda: current_app.send_task(HANDLE_CHANGES, queue=build_queue(lane)))


def wake_builders(lane: str, in_seconds: float, *, soon: bool = False) -> bool:
    """Make sure a build_due task of `lane` runs in `in_seconds` (or earlier). `soon`: sent
    from the hint thread (for a request or a post-commit hook)."""
    now = time.time()
    at = round(now + in_seconds, 2)
    try:
        script = redis_client().register_script(CLAIM_WAKE)
        if not script(keys=[redis_keys.build_wake(lane)], args=[at, now, int(in_seconds * 1000) + 60_000]):
            return False
    except RedisError:
        # Without the shared dedup, this process's own keeps a wake-up chain per process: in a
        # 30 s Redis outage, scheduling every wake-up made 6,000 build_due tasks (measured).
        if not _first_local_wake(lane, at, now):
            return False
        log.warning("Redis unavailable for wake-up dedup; deduplicating in this process only")
    send = hints.send_soon if soon else hints.send
    send("a build wake-up", lambda: current_app.send_task(BUILD_DUE, args=[lane], countdown=max(0.0, at - time.time()),
                                                          queue=build_queue(lane)))
    return True


_local_wakes: dict[str, float] = {}
_local_wakes_lock = threading.Lock()


def _first_local_wake(lane: str, at: float, now: float) -> bool:
    """CLAIM_WAKE's rule, within this process: no wake-up if one no later is still to come."""
    with _local_wakes_lock:
        current = _local_wakes.get(lane)
        if current is not None and now < current <= at:
            return False
        _local_wakes[lane] = at
        return True
