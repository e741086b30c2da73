"""Per-destination queues: which exist, how each worker declares its claim on them, and
telling the delivery workers to consume exactly those.

A delivery worker consumes every destination's queue (delivery.worker.kick_consumer, from the
database as it starts); when a destination is created, a broadcast tells running delivery
workers to add its queue (no restart); and every sweep broadcasts the whole list, so a worker
that missed a broadcast catches up within seconds and stops consuming the queues of deleted
destinations (which then expire).

Every delivery worker consumes every destination's queue, each with a priority of its own
(RabbitMQ's consumer priorities): a hash of the worker's name and the destination, so each
destination has a first choice among the running workers, spread evenly (rendezvous hashing).
RabbitMQ gives a queue's message to its highest-priority consumer that has room (a few
messages per queue, see kick_consumer), and to the next one when that one is full or gone.
Without priorities a worker that started first was first in every queue's turn: a fan-out to
2,000 destinations gave one of two workers 90% of the sends, the other sitting idle.
"""

import zlib

from celery import current_app
from celery.worker.control import control_command, inspect_command
from django.db import transaction
from django.db.models.signals import post_save

from omnium.clients.models import Destination
from omnium.messaging import hints
from omnium.routing import delivery_queue_declaration, is_delivery_worker

PRIORITIES = 10


def destination_ids() -> list[int]:
    return list(Destination.objects.order_by("pk").values_list("pk", flat=True))


def consumer_priority(worker: str, destination_id: int) -> int:
    """This worker's priority (0-9) for this destination's queue: the same on every start."""
    return zlib.crc32(f"{worker}/{destination_id}".encode()) % PRIORITIES


def declaration_for(worker: str, destination_id: int):
    """The destination's queue as this worker consumes it: with its priority."""
    queue = delivery_queue_declaration(destination_id)
    queue.consumer_arguments = {"x-priority": consumer_priority(worker, destination_id)}
    return queue


@control_command(args=[("destinations", list), ("complete", bool)], signature="<destinations> [complete]")
def omnium_consume_queues(state, destinations=(), complete=False):
    """Broadcast: delivery workers consume these destinations' queues (and, when the list is
    `complete`, stop consuming every other destination's)."""
    consumer = state.consumer
    if not is_delivery_worker(consumer.app):
        return {"ok": "not a delivery worker"}
    kicks = consumer.delivery_kicks
    # After this command's own message is handled: consuming waits for the broker's answer.
    consumer.call_soon(kicks.consume_exactly if complete else kicks.consume, list(destinations))
    return {"ok": "delivery worker"}


@inspect_command()
def active_queues(state):
    """The queues a worker consumes: Celery's task queues and, in a delivery worker, every
    destination's queue. Flower's broker view lists (with depth and consumers) the queues the
    workers report here; this takes the place of Celery's own command of the same name, which
    knows only the task consumer's queues."""
    consumer = state.consumer
    task_queues = consumer.task_consumer.queues if consumer.task_consumer else []
    kick_queues = consumer.delivery_kicks.consumer.queues if consumer.delivery_kicks.consumer else []
    return [dict(queue.as_dict(recurse=True)) for queue in [*task_queues, *kick_queues]]


def announce(ids: list[int], complete: bool = False) -> None:
    """Tell every running delivery worker to consume these destinations' queues (a hint; the
    sweeper repeats it with the complete list)."""
    hints.send("the delivery queues", lambda: _broadcast(ids, complete))


def _broadcast(ids: list[int], complete: bool) -> None:
    current_app.control.broadcast("omnium_consume_queues", arguments={"destinations": ids, "complete": complete},
                                  reply=False)


def _announce_new_destination(sender, instance, created, **kwargs):
    if created:  # saved in a request, often: from the hint thread
        transaction.on_commit(lambda: hints.send_soon("a new delivery queue", lambda: _broadcast([instance.pk], False)))


post_save.connect(_announce_new_destination, sender=Destination, dispatch_uid="delivery-announce-queue")
