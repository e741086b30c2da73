"""Per-destination queues: which exist, and making delivery workers consume exactly those.

A delivery worker is any worker that consumes DELIVERY_CONTROL_QUEUE. At start it consumes
every destination's queue (read from the database, see `worker_threads`); when a destination
is created, a broadcast tells running delivery workers to add its queue (no restart); and
every sweep broadcasts the whole list, so a worker that missed a broadcast catches up within
seconds and stops consuming the queues of deleted destinations (which then expire).

Every delivery worker consumes every destination's queue, each with a priority of its own
(RabbitMQ's consumer priorities): a hash of the worker's name and the destination, so each
destination has a first choice among the running workers, spread evenly (rendezvous hashing).
RabbitMQ gives a queue's message to its highest-priority consumer that has room (see
consumer_start: a few messages per queue), and to the next one when that one is full or gone.
Without priorities a worker that started first was first in every queue's turn: a fan-out to
2,000 destinations gave one of two workers 90% of the sends, the other sitting idle.
"""

import logging
import zlib

from celery import current_app
from celery.worker.control import control_command
from django.db import transaction
from django.db.models.signals import post_save

from omnium.clients.models import Destination
from omnium.routing import DELIVERY_CONTROL_QUEUE, delivery_queue, delivery_queue_declaration, destination_of

log = logging.getLogger(__name__)


def destination_ids() -> list[int]:
    return list(Destination.objects.order_by("pk").values_list("pk", flat=True))


def is_delivery_worker(consumer) -> bool:
    """By the queues it is set to consume (it may not have started consuming yet)."""
    task_consumer = consumer.task_consumer
    return task_consumer is not None and any(queue.name == DELIVERY_CONTROL_QUEUE for queue in task_consumer.queues)


def consumed_destinations(consumer) -> set[int]:
    """The destinations whose queues this worker consumes (none while it starts or stops)."""
    if consumer.task_consumer is None:
        return set()
    found = (destination_of(queue.name) for queue in consumer.task_consumer.queues)
    return {destination_id for destination_id in found if destination_id is not None}


def consume(consumer, ids) -> int:
    """Add the queues of these destinations that this worker does not consume yet."""
    # One set of the queues consumed, not consuming_from() per queue: that scans every queue,
    # and the sweeper announces every destination's queue every few seconds.
    missing = sorted(set(ids) - consumed_destinations(consumer))
    if missing:
        _consume_all(consumer, [_with_priority(delivery_queue_declaration(destination_id), consumer.hostname)
                                for destination_id in missing])
    return len(missing)


PRIORITIES = 10


def consumer_priority(worker: str, destination_id: int) -> int:
    """This worker's priority (0-9) for this destination's queue: the same on every start."""
    return zlib.crc32(f"{worker}/{destination_id}".encode()) % PRIORITIES


def _with_priority(queue, worker: str):
    queue.consumer_arguments = {"x-priority": consumer_priority(worker, destination_of(queue.name))}
    return queue


def _consume_all(consumer, declarations) -> None:
    """Declare these queues and consume them all at once.

    Celery's add_task_queue, once per queue, waits for three declarations' answers and then
    restarts consuming by walking every queue added so far: 1,000 queues took a worker 3.9 s
    to start, the second 500 slower than the first. Here the declarations are sent without
    waiting (the one consume that follows waits for its own answer, so an error surfaces
    there), and the walk is made once."""
    task_consumer = consumer.task_consumer
    queues = [consumer.app.amqp.queues.select_add(declaration) for declaration in declarations]
    for queue in queues:
        queue(task_consumer.channel).declare(nowait=True)
    declares, task_consumer.auto_declare = task_consumer.auto_declare, False
    try:
        for queue in queues:
            task_consumer.add_queue(queue)
    finally:
        task_consumer.auto_declare = declares
    task_consumer.consume()


def consume_exactly(consumer, ids) -> tuple[int, int]:
    """Consume these destinations' queues and no other destination's; (added, dropped)."""
    extra = consumed_destinations(consumer) - set(ids)
    for destination_id in sorted(extra):
        consumer.cancel_task_queue(delivery_queue(destination_id))
    return consume(consumer, ids), len(extra)


@control_command(args=[("destinations", list), ("complete", bool)], signature="<destinations> [complete]")
def omnium_consume_queues(state, destinations=(), complete=False):
    """Broadcast: delivery workers consume these destinations' queues (and, when the list is
    `complete`, stop consuming every other destination's)."""
    consumer = state.consumer
    if not is_delivery_worker(consumer):
        return {"ok": "not a delivery worker"}
    consumer.call_soon(consume_exactly if complete else consume, consumer, list(destinations))
    return {"ok": "delivery worker"}


def announce(ids: list[int], complete: bool = False) -> None:
    """Tell every running delivery worker to consume these destinations' queues (a hint; the
    sweeper repeats it with the complete list)."""
    try:
        current_app.control.broadcast("omnium_consume_queues", arguments={"destinations": ids, "complete": complete},
                                      reply=False)
    except Exception:
        log.warning("could not broadcast delivery queues", exc_info=True)


def _announce_new_destination(sender, instance, created, **kwargs):
    if created:
        transaction.on_commit(lambda: announce([instance.pk]))


post_save.connect(_announce_new_destination, sender=Destination, dispatch_uid="delivery-announce-queue")
