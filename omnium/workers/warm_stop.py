"""Work in flight in a worker that was asked to stop (a warm shutdown: SIGTERM, which Celery
reports with its ``worker_shutting_down`` signal).

A stopping worker finishes the piece of work in hand (a send, a build), takes no next one and
hands the rest to the other workers; a piece still running after the stop deadline is reported
by name to the caller's ``overrun``, which says so and gives its claim back, well before the
unit's stop timeout ends the process with SIGKILL.

The stop flag is shared between processes: the signal reaches the worker's main process, but a
prefork worker builds in its pool's child processes, forked after the flag was made (at import,
in the main process), which see it set. Each process runs its own overrun timer
(`overrun_after`), since only it knows what it has in flight.
"""

import logging
import multiprocessing
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)


class WarmStop:
    def __init__(self, what: str):
        self.what = what  # "sends", "builds": for the log
        self._stopping = multiprocessing.Event()
        self._lock = threading.Lock()
        # Keys may be in flight twice at once in one process (two drains of one destination:
        # a kick during a drain finds the lease held and returns): the first to end must not
        # hide the other.
        self._in_flight: Counter = Counter()

    def under_way(self) -> bool:
        """True once the worker has begun to stop: take no next piece of work."""
        return self._stopping.is_set()

    @contextmanager
    def in_flight(self, key) -> Iterator[None]:
        with self._lock:
            self._in_flight[key] += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight[key] -= 1
                if not self._in_flight[key]:
                    del self._in_flight[key]

    def running(self) -> list:
        with self._lock:
            return sorted(self._in_flight)

    def begin(self) -> None:
        """Begin to stop (from the shutdown signal, in the worker's main process)."""
        self._stopping.set()

    def overrun_after(self, deadline_s: float, overrun: Callable[[list], None]) -> None:
        """In this process: once the stop has begun, wait ``deadline_s`` and hand ``overrun``
        the keys of the work still in flight (if any)."""
        def watch():
            self._stopping.wait()
            log.info("stopping: waiting up to %g s for the %s in flight: %s", deadline_s, self.what,
                     self.running())
            time.sleep(deadline_s)
            unfinished = self.running()
            if unfinished:
                overrun(unfinished)

        threading.Thread(target=watch, name=f"warm-stop-{self.what}", daemon=True).start()
