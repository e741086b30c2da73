"""A worker that consumes only bulk queues runs nicer than the live and delivery workers, so
that on a shared host live builds and sends get the cores first."""

import os

import pytest

from omnium.routing import BULK_QUEUES, LIVE_QUEUES
from tests import child_processes


def niceness(process) -> int:
    return os.getpriority(os.PRIO_PROCESS, process.pid)


@pytest.mark.worker
def test_a_bulk_only_worker_runs_nicer_and_a_live_one_does_not(transactional_db):
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    bulk = child_processes.start_worker(BULK_QUEUES, "bulk-niced", 1)
    live = child_processes.start_worker([*LIVE_QUEUES, *BULK_QUEUES], "live-and-bulk", 1)
    quiet = child_processes.start_worker(BULK_QUEUES, "bulk-not-niced", 1, OMNIUM_BULK_WORKER_NICE=0)
    try:
        assert niceness(bulk) == min(19, ours + 10)
        assert niceness(live) == ours
        assert niceness(quiet) == ours
    finally:
        for process in (bulk, live, quiet):
            process.stop()
