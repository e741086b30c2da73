"""A worker that connects to the broker, at start or after an outage, asks at once for the
sweeps of the queues it consumes.

The hints of an outage are gone (never sent, or lost with a node); the sweepers find their
work in PostgreSQL, but beat sends a sweep only every SWEEP_INTERVAL_S, and the workers come
back one by one. Asked by the worker itself as it reconnects, the sweep runs as soon as there
is someone to run it: the first file after the broker's return reaches its client within about
a second instead of waiting for beat's next round.
"""

from celery import bootsteps

from omnium.messaging import hints, outage
from omnium.routing import SWEEPS, sweep_expires_s


class SweepOnConnect(bootsteps.StartStopStep):
    """A consumer step: Celery starts it with the consumer, and again after each reconnection."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def start(self, c):
        outage.succeeded()  # connected: whatever this process saw of an outage is over
        consumed = set(c.app.amqp.queues.consume_from)
        for task, queue in SWEEPS.values():
            if queue in consumed:
                hints.send(f"a {task} on connecting", lambda task=task, queue=queue: c.app.send_task(
                    task, queue=queue, expires=sweep_expires_s()))
