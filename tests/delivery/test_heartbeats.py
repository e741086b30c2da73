"""Delivery workers' heartbeats: which destinations a live worker serves, at a cost that does
not grow with the number of destinations."""

import time

from omnium import redis_keys
from omnium.delivery import heartbeats
from omnium.redis_client import redis_client


def test_a_destination_is_served_while_a_live_worker_names_it(clean_redis):
    r = redis_client()
    first, second = heartbeats.WorkerHeartbeat("first@host"), heartbeats.WorkerHeartbeat("second@host")
    first.beat(r, time.time(), frozenset({1, 2}))
    second.beat(r, time.time(), frozenset({2, 3}))

    assert heartbeats.served(r, [1, 2, 3, 4]) == [True, True, True, False]

    first.beat(r, time.time(), frozenset({2}))  # it stopped consuming destination 1's queue
    assert heartbeats.served(r, [1, 2, 3]) == [False, True, True]

    r.delete(redis_keys.worker("second@host"))  # its heartbeat expired: the worker is gone
    assert heartbeats.served(r, [1, 2, 3]) == [False, True, False]
    assert r.smembers(redis_keys.WORKERS) == {b"first@host"}  # the dead worker's name is forgotten


def test_a_beat_costs_the_same_commands_whatever_the_number_of_destinations(clean_redis):
    r = redis_client()
    heartbeat = heartbeats.WorkerHeartbeat("busy@host")
    many = frozenset(range(1, 5001))
    heartbeat.beat(r, time.time(), many)  # the first beat writes the set
    assert r.scard(redis_keys.worker_destinations("busy@host")) == 5000

    calls_before = _commands_processed(r)
    heartbeat.beat(r, time.time(), many)
    assert _commands_processed(r) - calls_before <= 4  # three commands, and the INFO that counts them

    r.delete(redis_keys.worker_destinations("busy@host"))  # Redis lost it (a restart): the next beat writes it again
    heartbeat.beat(r, time.time(), many)
    assert heartbeats.served(r, [1, 5000, 5001]) == [True, True, False]
    assert 0 < r.pttl(redis_keys.worker_destinations("busy@host")) <= heartbeats.ttl_ms()


def _commands_processed(r) -> int:
    return r.info("stats")["total_commands_processed"]
