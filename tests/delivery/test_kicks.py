"""Kicks: the post-commit hints that wake a destination's sender, on its own queue."""

import queue

from celery import current_app

from omnium.delivery.kicks import kick_all
from omnium.routing import delivery_queue_declaration


def _drain_messages(destination_id) -> list:
    """The drain tasks waiting on a destination's queue, as (task name, args), taken off it."""
    found = []
    with current_app.connection_for_read() as connection:
        waiting = connection.SimpleQueue(delivery_queue_declaration(destination_id))
        try:
            while True:
                message = waiting.get(timeout=0.5)
                found.append((message.headers["task"], message.decode()[0]))
                message.ack()
        except queue.Empty:
            return found
        finally:
            waiting.close()


def test_kicking_many_destinations_puts_one_drain_task_on_each_ones_queue():
    destinations = [9_000_007, 9_000_008, 9_000_009]  # no real destination has these

    kick_all(destinations)

    for destination_id in destinations:
        assert _drain_messages(destination_id) == [("omnium.delivery.tasks.drain_destination", [destination_id])]
