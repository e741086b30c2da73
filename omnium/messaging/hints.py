"""Sending hints: never an exception to the caller, never a wait in a request.

A hint that cannot be published costs time, not work: the sweepers re-derive it from
PostgreSQL within seconds. So a save whose post-commit hint finds no broker must succeed as
if the hint had gone. And it must not wait either: with a broker host that does not answer,
one publish waits out kombu's connect timeout for each node of the failover list, and Celery's
publish retries repeat that; in a request thread (the API has two) that is the whole API
stalled. So what a request or a save's post-commit hook publishes goes to this process's hint
thread (`send_soon`), which sends in order and drops, counted, what it cannot take.

The hint thread only publishes: a callable handed to it must not use the database (its
connection would belong to a thread that never closes it).
"""

import os
import queue
import threading

from omnium.messaging import outage

# Hints waiting for the thread. A broker that hangs holds the thread; past this many the
# newest are dropped (each is a hint the sweepers cover), so a stalled broker never grows a
# process's memory.
WAITING_AT_MOST = 10_000


def send(what: str, publish) -> bool:
    """Call `publish()` now; whether it went. A failure is told to `outage`, never raised.

    A `publish` that reports its own failures to `outage` (kicks.kick_all) may return
    normally after one: then no success is told either."""
    failures_before = outage.failures()
    try:
        publish()
    except Exception as error:  # whatever the broker connection raised: the sweepers cover it
        outage.failed(what, error)
        return False
    if outage.failures() != failures_before:
        return False
    outage.succeeded()
    return True


def send_soon(what: str, publish) -> None:
    """Have this process's hint thread call `publish()`; returns at once."""
    try:
        _thread().waiting.put_nowait((what, publish))
    except queue.Full:
        outage.failed(what, RuntimeError(f"{WAITING_AT_MOST} hints already waiting for the broker"))


def wait_until_sent(timeout: float = 10.0) -> bool:
    """Every hint handed over so far has been tried (for tests and orderly shutdowns)."""
    sender = _sender
    if sender is None or sender.pid != os.getpid():
        return True
    done = threading.Event()
    sender.waiting.put((None, done.set))
    return done.wait(timeout)


class _HintThread(threading.Thread):
    def __init__(self):
        super().__init__(name="omnium-hints", daemon=True)
        self.pid = os.getpid()
        self.waiting: queue.Queue = queue.Queue(maxsize=WAITING_AT_MOST)

    def run(self) -> None:
        while True:
            what, publish = self.waiting.get()
            if what is None:  # wait_until_sent's marker
                publish()
            else:
                send(what, publish)


_sender: _HintThread | None = None
_lock = threading.Lock()


def _thread() -> _HintThread:
    """This process's hint thread, started on first use (after a fork too: a child inherits
    the parent's object but not its thread)."""
    global _sender
    sender = _sender
    if sender is not None and sender.pid == os.getpid():
        return sender
    with _lock:
        if _sender is None or _sender.pid != os.getpid():
            _sender = _HintThread()
            _sender.start()
        return _sender
