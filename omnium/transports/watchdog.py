"""One watchdog thread per process for every send's deadline.

A `threading.Timer` per send started and ended an OS thread for each file sent: in a fan-out
of one small file to thousands of webhooks that was a thread start, a wake-up and a join per
send, a tenth of the sender's CPU. Here one daemon thread keeps the deadlines in a heap and
sleeps until the earliest; a deadline cancelled before it fires is only marked, and dropped
when it reaches the top. Deadlines are all about one send timeout long, so a new one is
almost never the earliest and rarely wakes the thread.
"""

import heapq
import itertools
import os
import threading
import time
from collections.abc import Callable


class Watch:
    """One registered deadline; `cancel()` before it fires and it never will."""

    __slots__ = ("at", "action", "cancelled")

    def __init__(self, at: float, action: Callable[[], None]):
        self.at = at
        self.action = action
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Watchdog:
    def __init__(self):
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()  # ties in time are taken in the order they came
        self._wake = threading.Condition(threading.Lock())
        self._thread_pid: int | None = None
        # Threads do not survive a fork, and a lock the thread held at that instant would stay
        # held in the child for good: its first send would wait forever (seen in a test).
        os.register_at_fork(after_in_child=self._forget_the_parents_thread)

    def _forget_the_parents_thread(self) -> None:
        self._wake = threading.Condition(threading.Lock())
        self._thread_pid = None
        self._heap = [item for item in self._heap if not item[2].cancelled]

    def watch(self, seconds: float, action: Callable[[], None]) -> Watch:
        """Run `action` in the watchdog's thread in `seconds`, unless cancelled first."""
        entry = Watch(time.monotonic() + seconds, action)
        with self._wake:
            self._ensure_thread()
            earliest = self._heap[0][0] if self._heap else None
            heapq.heappush(self._heap, (entry.at, next(self._order), entry))
            if earliest is None or entry.at < earliest:
                self._wake.notify()
        return entry

    def _ensure_thread(self) -> None:
        if self._thread_pid != os.getpid():  # the first watch, or the first in a forked child
            self._thread_pid = os.getpid()
            threading.Thread(target=self._run, daemon=True, name="send-deadlines").start()

    def _run(self) -> None:
        while True:
            with self._wake:
                due = self._next_due()
            if due is not None and not due.cancelled:
                due.action()

    def _next_due(self) -> Watch | None:
        """Wait (holding the condition) for the earliest live deadline to pass; pop it."""
        while True:
            while self._heap and self._heap[0][2].cancelled:
                heapq.heappop(self._heap)
            if not self._heap:
                self._wake.wait()
                continue
            left = self._heap[0][0] - time.monotonic()
            if left <= 0:
                return heapq.heappop(self._heap)[2]
            self._wake.wait(left)


watchdog = Watchdog()
