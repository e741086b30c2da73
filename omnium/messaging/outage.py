"""The broker's reachability as this process saw it, told once when it changes.

While RabbitMQ is down every hint fails: the post-commit hints of each save, beat's sweeps
twice a second; and each worker's consumer tries its connection every second. Logged one by
one, a 38 s outage left about 400 tracebacks in beat's log alone, and the one line that
mattered (since when, and is it back) was hard to find. Here the first failure says the broker
is unreachable and that the sweepers cover the unsent hints, later failures are only counted,
and the next message that goes through says how long the outage lasted and how many hints went
unsent. The gauge `omnium_broker_unreachable` is 1 meanwhile (deploy/prometheus/omnium-rules.yml
alerts on it).
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
    global _unsent, _failures
    with _lock:
        _unsent += 1
        _failures += 1
    unreachable(f"sending {what}", error)


def unreachable(doing: str, error: BaseException) -> None:
    """The broker could not be reached while `doing`; told once, when an outage begins. For what
    is not a hint (a worker's consumer connecting), so that no hint is counted unsent, and a
    hint published meanwhile is not taken for a failed one (see `failures`)."""
    global _began_at
    with _lock:
        if _began_at is not None:
            return
        _began_at = time.monotonic()
    _gauge().set(1)
    log.warning("The broker cannot be reached (%s, %s): hints are not sent until it is back, and the "
                "sweepers find their work in PostgreSQL. Said once; its return will be said too.",
                _plain(error), doing)


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
    """For the Celery loggers that log each failure of an outage, one line at a time: each such
    record becomes part of the one outage notice (see `failed`); every other record passes.

    - beat's "Message Error", for each sweep it could not send (about 400 in a 38 s outage);
    - a worker consumer's "Cannot connect", for each try of its connection: every second for
      as long as the broker is gone (omnium.messaging.reconnecting), three a second for a
      cluster of three. Its return is told as the consumer starts again (sweep_on_connect).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        if message.startswith("Message Error"):
            failed("a scheduled sweep", _error_of(record))
            return False
        if message.startswith("consumer: Cannot connect"):
            address = record.args[0] if isinstance(record.args, tuple) and record.args else "the broker"
            unreachable(f"the worker connecting to {address}", _error_of(record))
            return False
        return True


def _error_of(record: logging.LogRecord) -> BaseException:
    if record.exc_info:
        return record.exc_info[1]
    arguments = record.args if isinstance(record.args, tuple) else ()
    return next((argument for argument in arguments if isinstance(argument, BaseException)),
                RuntimeError(record.getMessage()))
