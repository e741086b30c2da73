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

from omnium.delivery.engine import transport_cache
from omnium.workers.warm_stop import WarmStop

log = logging.getLogger(__name__)

_drains = WarmStop("sends")  # by destination id
_lock = threading.Lock()
_cut: set[int] = set()  # destinations whose send was cut at the drain deadline

under_way = _drains.under_way  # True once this worker has begun to stop: drains end before their next file
draining = _drains.in_flight  # around a drain of one destination


def begin(deadline_s: float) -> None:
    """Stop: drains end after their send in flight, and those still running after
    ``deadline_s`` are cut (`cut_unfinished`)."""
    _drains.begin()
    _drains.overrun_after(deadline_s, lambda unfinished: cut_unfinished(unfinished, deadline_s))


def cut_unfinished(unfinished: list[int], deadline_s: float) -> None:
    """Cut the sends of the drains still running; their failures say why (`was_cut`)."""
    with _lock:
        _cut.update(unfinished)
    for destination_id in unfinished:
        log.error("stopping: the send to destination %s did not finish within the %g s drain deadline: cut",
                  destination_id, deadline_s)
        transport_cache.cut(destination_id)


def was_cut(destination_id: int) -> bool:
    """Whether the destination's send was cut because the worker's stop deadline passed."""
    with _lock:
        return destination_id in _cut
