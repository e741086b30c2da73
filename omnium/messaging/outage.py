"""The broker's reachability as this process saw it, told once when it changes.

While RabbitMQ is down every hint fails: the post-commit hints of each save, beat's sweeps
twice a second. Logged one by one, a 38 s outage left about 400 tracebacks in beat's log
alone, and the one line that mattered (since when, and is it back) was hard to find. Here the
first failure says the broker is unreachable and that the sweepers cover the unsent hints,
later failures are only counted, and the next message that goes through says how long the
outage lasted and how many hints went unsent. The gauge `omnium_broker_unreachable` is 1
meanwhile (deploy/prometheus/omnium-rules.yml alerts on it).
"""

import logging
import threading
import time

log = logging.getLogger(__name__)

_lock = threading.Lock()
_began_at: float | None = None
_unsent = 0
_failures = 0  # every failure ever seen: `hints.send` compares it around a publish


def failed(what: str, error: BaseException) -> None:
    """A hint (`what`) could not be published."""
    global _began_at, _unsent, _failures
    with _lock:
        _unsent += 1
        _failures += 1
        if _began_at is not None:
            return
        _began_at = time.monotonic()
    _gauge().set(1)
    log.warning("The broker cannot be reached (%s, sending %s): hints are not sent until it is back, and the "
                "sweepers find their work in PostgreSQL. Said once; its return will be said too.",
                _plain(error), what)


def succeeded() -> None:
    """A message went through: an outage seen by this process has ended."""
    global _began_at, _unsent
    if _began_at is None:  # the common case, without the lock
        return
    with _lock:
        if _began_at is None:
            return
        lasted, unsent = time.monotonic() - _began_at, _unsent
        _began_at, _unsent = None, 0
    _gauge().set(0)
    log.warning("The broker is reachable again after %.1f s; %d hints went unsent meanwhile (the sweepers "
                "covered them).", lasted, unsent)


def in_outage() -> bool:
    return _began_at is not None


def failures() -> int:
    return _failures


def _gauge():
    # Imported at first use: a worker chooses where its metrics live before the library loads
    # (omnium.metrics.process_files), and this module is imported before that.
    from omnium.metrics import families

    return families.broker_unreachable()


def _plain(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:200]


class OncePerOutage(logging.Filter):
    """For Celery beat's logger: its "Message Error" for each entry it could not send becomes
    one outage notice (see `failed`); every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Message Error"):
            return True
        error = record.exc_info[1] if record.exc_info else RuntimeError(str(record.args[0] if record.args else ""))
        failed("a scheduled sweep", error)
        return False
