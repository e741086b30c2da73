"""Kicks: the post-commit hints that wake a destination's sender, on its own queue."""

import base64
import json

from omnium.delivery.kicks import kick_all
from omnium.routing import delivery_queue


def _drain_messages(broker, destination_id) -> list:
    """The drain tasks waiting on a destination's queue, as (task name, args)."""
    found = []
    for raw in broker.lrange(delivery_queue(destination_id), 0, -1):
        message = json.loads(raw)
        args = json.loads(base64.b64decode(message["body"]))[0]
        found.append((message["headers"]["task"], args))
    return found


def test_kicking_many_destinations_puts_one_drain_task_on_each_ones_queue(clean_redis):
    kick_all([7, 8, 9])

    for destination_id in (7, 8, 9):
        assert _drain_messages(clean_redis, destination_id) == [
            ("omnium.delivery.tasks.drain_destination", [destination_id])]
