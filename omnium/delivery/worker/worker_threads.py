"""A delivery worker's start: its destination queues, and two background threads.

At start the worker consumes every destination's queue (delivery.worker.kick_consumer), and loads
every destination (in a thread of its own, see sender.load_destinations). Then three threads run beside the tasks: its
heartbeat, the control listener, and the publisher of the sends' statuses (see health).

The heartbeat says "this worker is alive and serves these destinations" every few seconds;
when the worker dies, the keys expire and the screens show its destinations as stalled. The
listener reacts to pause / resume messages within a second (a pause cuts the send in
progress); the actions' state is in PostgreSQL, so a missed message changes only the delay.
"""

import json
import logging
import threading
import time

from celery.signals import worker_ready
from django.db import connections
from redis.exceptions import RedisError

from omnium import redis_keys
from omnium.delivery import health, heartbeats
from omnium.delivery.engine import sender, transport_cache
from omnium.redis_client import redis_client
from omnium.routing import is_delivery_worker

log = logging.getLogger(__name__)


def _heartbeat_loop(consumer, hostname: str) -> None:
    heartbeat = heartbeats.WorkerHeartbeat(hostname)
    while True:
        try:
            health.beat(heartbeat, frozenset(consumer.delivery_kicks.consumed_destinations()))
        except Exception:  # a heartbeat must never kill the worker
            log.warning("heartbeat failed", exc_info=True)
        time.sleep(heartbeats.interval_s())


def _control_loop() -> None:
    while True:
        try:
            pubsub = redis_client().pubsub(ignore_subscribe_messages=True)
            pubsub.subscribe(redis_keys.CONTROL_CHANNEL)
            for message in pubsub.listen():
                _obey(json.loads(message["data"]))
        except (RedisError, ValueError):
            log.warning("control channel lost; listening again in 1 s", exc_info=True)
            time.sleep(1)


def _obey(command: dict) -> None:
    if command.get("action") == "pause" and transport_cache.cut(int(command["destination"])):
        log.info("paused destination %s: send in progress cut", command["destination"])


@worker_ready.connect  # after the consumer's steps started: the kick consumer has its queues
def _start_delivery_worker(sender, **kwargs):
    if is_delivery_worker(sender.app):
        start(sender, sorted(sender.delivery_kicks.consumed_destinations()))


def _load_destinations(ids) -> None:
    try:
        log.info("delivery worker: %d destinations loaded", sender.load_destinations(ids))
    except Exception:  # an optimisation: each drain loads what it misses
        log.warning("could not load the destinations ahead of their drains", exc_info=True)
    finally:
        connections.close_all()  # this thread's, idle from now on


def start(consumer, ids=()) -> None:
    """The heartbeat (which publishes the sends' last successes too) and the control listener;
    and the destinations `ids` loaded meanwhile."""
    hostname = consumer.hostname if hasattr(consumer, "hostname") else "worker"
    for target, args in ((_heartbeat_loop, (consumer, hostname)), (_control_loop, ()), (_load_destinations, (ids,))):
        threading.Thread(target=target, args=args, daemon=True, name=target.__name__).start()
