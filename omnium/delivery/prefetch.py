"""A delivery worker's prefetch on RabbitMQ: a small limit per destination queue, none per channel.

Celery sets one prefetch limit for the whole channel (global QoS) on RabbitMQ 3.x. With a
consumer per destination queue that limit is shared by thousands of queues, and RabbitMQ's
channel limiter wakes every queue it blocked each time a message is acknowledged: with 2,000
destinations each owed one file, the broker took about half a core for 80 sends a second,
and each wake-up costs more as destinations are added (bench/scale.py).

Per consumer, each queue keeps its own small count and an acknowledgement concerns only its
queue. The limit per destination queue is small on purpose: a drain running, one kick waiting
behind it, and room for a retry's countdown kick, which a worker holds unacknowledged until
it is due; further kicks wait in RabbitMQ, where another worker (another host) can take them.
"""

from celery import bootsteps

# Messages one worker may hold from one destination's queue.
PREFETCH_PER_DESTINATION = 4


class PerDestinationPrefetch(bootsteps.StartStopStep):
    """Between the task consumer's creation and its first consume (at start-up and after
    every reconnection): no channel limit, and a limit for each consumer made from then on
    (the destination queues added later at run time included)."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def start(self, c):
        from omnium.delivery import queues  # the models: Django is set up once the worker starts

        if c.connection.transport.driver_type != "amqp" or not queues.is_delivery_worker(c):
            return  # the Redis transport emulates QoS itself; build workers have a few queues
        # Celery raises the channel's limit while it holds countdown tasks; per consumer the
        # fixed limit already leaves room for them, and a channel limit would come back.
        c.qos.callback = lambda prefetch_count: None
        c.qos_global = False
        # Before the event loop starts consuming: each consumer it makes gets the limit.
        channel = c.task_consumer.channel
        channel.basic_qos(0, 0, True)
        channel.basic_qos(0, PREFETCH_PER_DESTINATION, False)
