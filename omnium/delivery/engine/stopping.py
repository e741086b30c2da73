"""A delivery worker that is stopping (a warm shutdown, SIGTERM): its drains hand their
destinations over after the send in flight, and a send still running when the drain deadline
passes is cut, logged and recorded as an error naming its destination.

Celery's warm shutdown stops taking kicks and waits for the pool's drains to end; without this,
a drain would go on through everything its destination is owed (up to its 20 s budget) and a
send to a host that trickles would hold the stop until systemd's SIGKILL, the lease with it.
Here each drain stops before its next file and re-kicks its destination, which another worker
takes at once; the lease is released as after any drain. The worker calls ``begin`` from its
shutdown signal (delivery.worker.warm_shutdown).
"""

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from omnium.delivery.engine import transport_cache

log = logging.getLogger(__name__)

_stopping = threading.Event()
_lock = threading.Lock()
# Drains running in this process, by destination: two at once for one destination happen (a
# kick that arrives during a drain finds the lease held and returns), and the first to end
# must not hide the other.
_in_flight: Counter[int] = Counter()
_cut: set[int] = set()  # those whose send was cut at the drain deadline


def under_way() -> bool:
    """True once this worker has begun to stop: drains end before their next file."""
    return _stopping.is_set()


@contextmanager
def draining(destination_id: int) -> Iterator[None]:
    with _lock:
        _in_flight[destination_id] += 1
    try:
        yield
    finally:
        with _lock:
            _in_flight[destination_id] -= 1
            if not _in_flight[destination_id]:
                del _in_flight[destination_id]


def begin(deadline_s: float) -> None:
    """Stop: drains end after their send in flight, and those still running after
    ``deadline_s`` are cut (`cut_unfinished`)."""
    _stopping.set()
    with _lock:
        running = sorted(_in_flight)
    log.info("stopping: waiting up to %g s for the sends in flight to %d destinations %s", deadline_s,
             len(running), running)
    timer = threading.Timer(deadline_s, cut_unfinished, args=(deadline_s,))
    timer.daemon = True
    timer.start()


def cut_unfinished(deadline_s: float) -> list[int]:
    """Cut the sends of the drains still running; their failures say why (`was_cut`)."""
    with _lock:
        unfinished = sorted(_in_flight)
        _cut.update(unfinished)
    for destination_id in unfinished:
        log.error("stopping: the send to destination %s did not finish within the %g s drain deadline: cut",
                  destination_id, deadline_s)
        transport_cache.cut(destination_id)
    return unfinished


def was_cut(destination_id: int) -> bool:
    """Whether the destination's send was cut because the worker's stop deadline passed."""
    with _lock:
        return destination_id in _cut
