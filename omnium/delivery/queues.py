"""Per-destination queues: which exist, and making delivery workers consume them.

A delivery worker is any worker that consumes DELIVERY_CONTROL_QUEUE. At start it adds every
destination's queue (read from the database, see `worker_threads`); when a destination is
created, a broadcast tells running delivery workers to add its queue (no restart); and every
sweep repeats that broadcast, so a worker that missed one catches up within seconds.
"""

import logging

from celery import current_app
from celery.worker.control import control_command
from django.db import transaction
from django.db.models.signals import post_save

from omnium.clients.models import Destination
from omnium.routing import DELIVERY_CONTROL_QUEUE, delivery_queue

log = logging.getLogger(__name__)


def destination_queues() -> list[str]:
    return [delivery_queue(pk) for pk in Destination.objects.order_by("pk").values_list("pk", flat=True)]


def is_delivery_worker(consumer) -> bool:
    return consumer.task_consumer is not None and consumer.task_consumer.consuming_from(DELIVERY_CONTROL_QUEUE)


def consume(consumer, queues) -> int:
    """Add the queues this worker does not consume yet; returns how many were added."""
    # One set of the queues consumed, not consuming_from() per queue: that scans every queue,
    # and the sweeper announces every destination's queue every few seconds.
    consumed = {queue.name for queue in consumer.task_consumer.queues}
    missing = [queue for queue in queues if queue not in consumed]
    for queue in missing:
        consumer.add_task_queue(queue)
    return len(missing)


@control_command(args=[("queues", list)], signature="<queues>")
def omnium_consume_queues(state, queues=()):
    """Broadcast: delivery workers start consuming these destination queues."""
    consumer = state.consumer
    if is_delivery_worker(consumer):
        consumer.call_soon(consume, consumer, list(queues))
    return {"ok": "delivery worker" if is_delivery_worker(consumer) else "not a delivery worker"}


def announce_queues(queues: list[str]) -> None:
    """Tell every running delivery worker to consume `queues` (a hint; the sweeper repeats it)."""
    try:
        current_app.control.broadcast("omnium_consume_queues", arguments={"queues": queues}, reply=False)
    except Exception:
        log.warning("could not broadcast new delivery queues", exc_info=True)


def _announce_new_destination(sender, instance, created, **kwargs):
    if created:
        transaction.on_commit(lambda: announce_queues([delivery_queue(instance.pk)]))


post_save.connect(_announce_new_destination, sender=Destination, dispatch_uid="delivery-announce-queue")
