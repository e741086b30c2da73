"""How a delivery worker takes a kick: the destination id goes straight to a pool thread.

A kick is a hint that carries one destination id. Celery's default strategy made a full
request of each (its headers parsed into a request dict, its time limits, its signals,
a tracer around the call, two callbacks to acknowledge it), and in py-spy samples of a
delivery worker during a fan-out to 5,000 destinations the consumer thread receiving kicks
held the GIL about as long as the sends themselves. Here a kick costs the body's decoding
and a hand-over to the worker's own thread pool, which still runs the drain, waits for it at
a warm shutdown and leaves its message unacknowledged until the drain ends (acks late: a
worker that dies returns its kicks to the broker at once).

What the default strategy still takes: a kick with a countdown (an ETA: a retry's, or the
look when another sender's lease ends), and any kick when the pool is not a thread pool.
"""

import logging

from celery.concurrency.thread import TaskPool as ThreadPool
from celery.worker.strategy import default

from omnium import worker_connections
from omnium.delivery import kicks, proofs, sender

log = logging.getLogger(__name__)


def drain_strategy(task, app, consumer, **options):
    """Celery's task strategy for drain_destination (Task.Strategy)."""
    fallback = default(task, app, consumer, **options)
    if not isinstance(consumer.pool, ThreadPool):
        return fallback
    proofs.set_worker_name(consumer.hostname)
    pool, connection_errors = consumer.pool, consumer.connection_errors

    def on_kick(message, body, ack, reject, callbacks):
        destination_id = _plain_kick(message)
        if destination_id is None:  # a countdown, or a message not made as kicks are
            return fallback(message, body, ack, reject, callbacks)
        pool.apply_async(drain, (destination_id, lambda: ack(log, connection_errors)), callback=_ignore)

    return on_kick


def _plain_kick(message) -> int | None:
    """The destination id of a kick due now, as kicks.kick_all makes them; None for anything
    else (Celery's own strategy decodes it, or refuses it without stopping the consumer)."""
    headers = message.headers
    if headers.get("eta") or headers.get("expires") or headers.get("compression"):
        return None
    if message.content_type != "application/json":
        return None
    return kicks.destination_of_kick_body(message.body)


def _ignore(result) -> None:
    """The pool calls back with the drain's return value (None)."""


def drain(destination_id: int, ack) -> None:
    """Drain the destination as a task would run (its connections kept while sound), then
    acknowledge the kick, whatever the drain's end."""
    worker_connections.before_task()
    try:
        sender.drain(destination_id)
    except Exception:
        log.exception("drain of destination %s failed", destination_id)
        worker_connections.after_task(succeeded=False)
    else:
        worker_connections.after_task(succeeded=True)
    finally:
        ack()
