"""Bulk workers yield the CPU to live ones.

A worker that consumes only bulk queues (full rebuilds, the first builds of a new Games'
16,700 pull files, imports, backfills, alerts) lowers its CPU priority by BULK_WORKER_NICE as
it starts, before it forks its pool, so every process of it runs niced. On a host it shares
with live builders and delivery workers, a live change's build and sends then get the cores
first and the bulk work takes what is left: the bulk lane exists so that slow work never
delays urgent work, and that must hold for CPU as well as for queues. A worker with any other
queue (a live lane, deliveries) keeps its priority.
"""

import logging
import os

from omnium.conf import omnium_setting
from omnium.routing import BULK_QUEUES

log = logging.getLogger(__name__)


def yield_if_bulk_only(queues) -> int:
    """Lower this process's priority when `queues` (a worker's -Q) are all bulk queues;
    returns the niceness added (0: priority kept)."""
    if not queues or not set(queues) <= set(BULK_QUEUES):
        return 0
    increment = omnium_setting("BULK_WORKER_NICE")
    if increment:
        os.nice(increment)
        log.info("bulk-only worker: CPU priority lowered by %s (nice %s)", increment, os.nice(0))
    return increment
