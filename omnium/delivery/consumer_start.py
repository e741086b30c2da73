"""What a delivery worker does each time its task consumer starts (at start-up, and after every
reconnection to the broker): set its prefetch, and forget the kicks on their way.

Prefetch on RabbitMQ: a small limit per destination queue, none per channel.

Celery sets one prefetch limit for the whole channel (global QoS) on RabbitMQ 3.x. With a
consumer per destination queue that limit is shared by thousands of queues, and RabbitMQ's
channel limiter wakes every queue it blocked each time a message is acknowledged: with 2,000
destinations each owed one file, the broker took about half a core for 80 sends a second,
and each wake-up costs more as destinations are added (bench/scale.py).

Per consumer, each queue keeps its own small count and an acknowledgement concerns only its
queue. The limit per destination queue is small on purpose: a drain running and one more (a
kick waiting behind it, or a retry's countdown kick, which a worker holds unacknowledged until
it is due). Further kicks wait in RabbitMQ for the queue's next consumer by priority (see
queues): a worker that froze mid-send holds two kicks of each destination it prefers, and the
sweeper's next kick goes to another worker.

Kicks on their way: a broker that restarted lost its waiting kicks (they are transient), but
their marks in Redis would keep the sweeper from re-kicking those destinations until the
marks expire. Forgotten, the next sweep re-kicks every destination owed work.
"""

from celery import bootsteps

# Messages one worker may hold from one destination's queue.
PREFETCH_PER_DESTINATION = 2


class DeliveryConsumerStart(bootsteps.StartStopStep):
    """Between the task consumer's creation and its first consume."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def start(self, c):
        from omnium.delivery import kicks, queues  # the models: Django is set up once the worker starts

        if not queues.is_delivery_worker(c):
            return
        kicks.forget_all_on_their_way()
        if c.connection.transport.driver_type == "amqp":  # the Redis transport emulates QoS itself
            per_destination_prefetch(c)


def per_destination_prefetch(c) -> None:
    """No channel limit, and a limit for each consumer made from now on (the destination
    queues added later at run time included)."""
    # Celery raises the channel's limit while it holds countdown tasks; per consumer the fixed
    # limit already leaves room for them, and a channel limit would come back.
    c.qos.callback = lambda prefetch_count: None
    c.qos_global = False
    channel = c.task_consumer.channel
    channel.basic_qos(0, 0, True)
    channel.basic_qos(0, PREFETCH_PER_DESTINATION, False)
