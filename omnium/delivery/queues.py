"""Per-destination queues: kicking a destination, and making delivery workers consume them.

A delivery worker is any worker that consumes DELIVERY_CONTROL_QUEUE. At start it adds every
destination's queue (read from the database); when a destination is created, a broadcast
tells running delivery workers to add its queue (no restart); and every sweep repeats that
broadcast, so a worker that missed one catches up within seconds.
"""

import logging

from celery.signals import worker_ready
from celery.worker.control import control_command

from omnium.routing import DELIVERY_CONTROL_QUEUE, delivery_queue

log = logging.getLogger(__name__)


def kick(destination_id: int, countdown: float = 0) -> None:
    """Hint the destination's sender that it has owed work. Safe to call any number of times."""
    from omnium.delivery.tasks import drain_destination

    try:
        drain_destination.apply_async(args=[destination_id], queue=delivery_queue(destination_id),
                                      countdown=countdown)
    except Exception:  # the broker may be down; the sweeper re-kicks from PostgreSQL
        log.warning("could not kick destination %s", destination_id, exc_info=True)


def kick_all(destination_ids) -> None:
    """Kick many destinations through one broker connection, in one pipelined batch.

    A version owed to 500 destinations is 500 messages. Taking a pooled connection for each
    cost about 3 ms; and one round trip each cost a builder about 10 ms a kick under load
    (0.2 s for 20 destinations, after every version, before it could build the next file)."""
    from omnium.celery import app
    from omnium.delivery.tasks import drain_destination

    try:
        with app.producer_or_acquire() as producer, producer.batch():
            for destination_id in destination_ids:
                drain_destination.apply_async(args=[destination_id], queue=delivery_queue(destination_id),
                                              producer=producer)
    except Exception:  # the broker may be down; the sweeper re-kicks from PostgreSQL
        log.warning("could not kick %d destinations", len(destination_ids), exc_info=True)


def destination_queues() -> list[str]:
    from omnium.clients.models import Destination

    return [delivery_queue(pk) for pk in Destination.objects.order_by("pk").values_list("pk", flat=True)]


def _is_delivery_worker(consumer) -> bool:
    return consumer.task_consumer is not None and consumer.task_consumer.consuming_from(DELIVERY_CONTROL_QUEUE)


def _consume(consumer, queues) -> int:
    # One set of the queues consumed, not consuming_from() per queue: that scans every queue,
    # and the sweeper announces every destination's queue every few seconds.
    consumed = {queue.name for queue in consumer.task_consumer.queues}
    missing = [queue for queue in queues if queue not in consumed]
    for queue in missing:
        consumer.add_task_queue(queue)
    return len(missing)


@worker_ready.connect
def _consume_destination_queues_at_start(sender, **kwargs):
    if _is_delivery_worker(sender):
        from omnium.delivery import worker_threads

        log.info("delivery worker: consuming %d destination queues", _consume(sender, destination_queues()))
        worker_threads.start(sender)


@control_command(args=[("queues", list)], signature="<queues>")
def omnium_consume_queues(state, queues=()):
    """Broadcast: delivery workers start consuming these destination queues."""
    consumer = state.consumer
    if _is_delivery_worker(consumer):
        consumer.call_soon(_consume, consumer, list(queues))
    return {"ok": "delivery worker" if _is_delivery_worker(consumer) else "not a delivery worker"}


def announce_queues(queues: list[str]) -> None:
    """Tell every running delivery worker to consume `queues` (a hint; the sweeper repeats it)."""
    from omnium.celery import app

    try:
        app.control.broadcast("omnium_consume_queues", arguments={"queues": queues}, reply=False)
    except Exception:
        log.warning("could not broadcast new delivery queues", exc_info=True)


def _announce_new_destination(sender, instance, created, **kwargs):
    if created:
        from django.db import transaction

        transaction.on_commit(lambda: announce_queues([delivery_queue(instance.pk)]))


def _connect_model_signals():
    from django.db.models.signals import post_save

    from omnium.clients.models import Destination

    post_save.connect(_announce_new_destination, sender=Destination, dispatch_uid="delivery-announce-queue")


_connect_model_signals()
