"""How a delivery worker takes its kicks: a consumer bootstep, Celery's documented extension
point for a worker's own message consumers.

The step owns one kombu Consumer over every destination's queue (added and cancelled at run
time, see `queues`). A kick's body is the destination id; the consumer hands it to the
worker's thread pool, which drains the destination and then acknowledges the kick (acks
late: a worker that dies returns its kicks to the broker at once). Celery starts the step
with the worker's consumer and again after every reconnection to the broker, on a new
channel.

Prefetch: a small limit per destination queue (RabbitMQ's per-consumer QoS), none per
channel. One limit shared by thousands of queues made RabbitMQ wake every queue it blocked at
each acknowledgement (2,000 destinations each owed a file: half a core of the broker for 80
sends a second). The limit per queue is small on purpose, a drain running and one kick
waiting behind it: further kicks wait in RabbitMQ for the queue's next consumer by priority
(see queues), so a worker that froze mid-send holds two kicks of each destination it prefers,
and the sweeper's next kick reaches another worker.

Kicks on their way: a broker that restarted lost its waiting kicks (they are transient), but
their marks in Redis would keep the sweeper from re-kicking those destinations until the
marks expire. The step forgets them as it starts, so the next sweep re-kicks every
destination owed work.
"""

import logging

from celery import bootsteps
from kombu import Consumer

from omnium.delivery import kicks
from omnium.routing import delivery_queue, destination_of, is_delivery_worker
from omnium.workers import database_connections

log = logging.getLogger(__name__)

# Messages one worker may hold from one destination's queue.
PREFETCH_PER_DESTINATION = 2


class DeliveryKicks(bootsteps.ConsumerStep):
    """Every destination's queue, consumed by a delivery worker (no other worker starts it)."""

    def __init__(self, c, **kwargs):
        super().__init__(c, **kwargs)
        self.pool = self.consumer = self.hostname = None
        self.left_out_once: set[int] = set()  # consumed, yet missing from the last complete list
        c.delivery_kicks = self  # for the control commands (queues), which get Celery's consumer

    def start(self, c):
        if not is_delivery_worker(c.app):
            return
        from omnium.delivery.engine import proofs  # its models: Django is set up once the worker starts

        self.pool, self.hostname = c.pool, c.hostname
        proofs.set_worker_name(c.hostname)
        kicks.forget_all_on_their_way()
        super().start(c)
        log.info("delivery worker: consuming %d destination queues", len(self.consumed_destinations()))

    def get_consumers(self, channel):
        from omnium.delivery.worker import queues

        # Per consumer (RabbitMQ's reading of global=False), so it holds for every queue added
        # to the consumer later too.
        channel.basic_qos(0, PREFETCH_PER_DESTINATION, False)
        self.left_out_once = set()
        self.consumer = Consumer(channel, callbacks=[self.on_kick], accept=["json"], auto_declare=False)
        self._add(queues.destination_ids())
        return [self.consumer]

    def shutdown(self, c):
        super().shutdown(c)
        self.consumer = None

    def on_kick(self, body, message) -> None:
        """In the worker's event loop: hand the destination over, nothing more."""
        destination_id = kicks.destination_of_kick(body)
        if destination_id is None:  # not a kick (a message left from an older release): the sweeper covers
            log.warning("ignored a message on %s that is not a kick: %.80r", message.delivery_info.get("routing_key"),
                        body)
            message.ack()
            return
        self.pool.apply_async(drain, (destination_id, message.ack), callback=_ignore)

    # --- the destination queues, changed at run time by the control commands (see queues) ---

    def consumed_destinations(self) -> set[int]:
        if self.consumer is None:
            return set()
        found = (destination_of(queue.name) for queue in self.consumer.queues)
        return {destination_id for destination_id in found if destination_id is not None}

    def consume(self, ids) -> int:
        """Consume the queues of these destinations that are not consumed yet; how many."""
        if self.consumer is None:
            return 0
        added = self._add(ids)
        if added:
            self.consumer.consume()  # only the queues not consumed yet
        return added

    def consume_exactly(self, ids) -> tuple[int, int]:
        """Consume these destinations' queues, and drop those of any other destination that the
        complete list before this one left out too; (added, dropped).

        A destination missing from one complete list may have been made while the sweeper read
        it (its own announcement came first): dropped at once, its first kick would wait for the
        next sweep. Missing from two lists in a row, it was deleted, and its queue, no longer
        consumed, expires."""
        if self.consumer is None:
            return 0, 0
        left_out = self.consumed_destinations() - set(ids)
        gone = left_out & self.left_out_once
        for destination_id in sorted(gone):
            self.consumer.cancel_by_queue(delivery_queue(destination_id))
        self.left_out_once = left_out - gone
        return self.consume(ids), len(gone)

    def _add(self, ids) -> int:
        """Declare the missing queues without waiting for the broker's answers, and add them.

        Declaring a queue and waiting is a round trip: 1,000 queues took a worker 3.9 s to
        start. Sent without waiting, an error surfaces in the consume that follows (on the
        same channel, so each queue exists before it is consumed)."""
        from omnium.delivery.worker import queues

        missing = sorted(set(ids) - self.consumed_destinations())
        for destination_id in missing:
            queue = queues.declaration_for(self.hostname, destination_id)(self.consumer.channel)
            queue.declare(nowait=True)
            self.consumer.add_queue(queue)
        return len(missing)


def _ignore(result) -> None:
    """The pool calls back with the drain's return value (None)."""


def drain(destination_id: int, ack) -> None:
    """In a pool thread: drain the destination (its database connection kept while sound),
    then acknowledge the kick, whatever the drain's end."""
    from omnium.delivery.engine import sender

    database_connections.before_task()
    try:
        sender.drain(destination_id)
    except Exception:
        log.exception("drain of destination %s failed", destination_id)
        database_connections.after_task(succeeded=False)
    else:
        database_connections.after_task(succeeded=True)
    finally:
        ack()
