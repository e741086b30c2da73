"""Kicks: the post-commit hints that wake a destination's sender, on its own queue."""

import queue
from datetime import timedelta

import pytest
from celery import current_app
from django.conf import settings
from django.utils import timezone

from devtools import broker
from devtools.processes import free_port
from omnium import redis_keys
from omnium.delivery import kicks, tasks
from omnium.delivery.engine import lease, sender
from omnium.delivery.kicks import TRANSIENT, kick, kick_all
from omnium.delivery.models import DeliveryState
from omnium.redis_client import redis_client
from omnium.routing import delivery_queue, delivery_queue_declaration
from tests.delivery.fixtures import webhook_settings


def _drain_messages(destination_id, delivery_modes=None) -> list:
    """The kicks waiting on a destination's queue, as the destination ids they name, taken off
    it; each one's AMQP delivery mode is appended to `delivery_modes`."""
    found = []
    with current_app.connection_for_read() as connection:
        waiting = connection.SimpleQueue(delivery_queue_declaration(destination_id))
        try:
            while True:
                message = waiting.get(timeout=0.5)
                found.append(kicks.destination_of_kick(message.decode()))
                if delivery_modes is not None:
                    delivery_modes.append(message.properties["delivery_mode"])
                message.ack()
        except queue.Empty:
            return found
        finally:
            waiting.close()


@pytest.mark.broker
def test_kicking_many_destinations_puts_one_kick_naming_it_on_each_ones_queue():
    destinations = [9_000_007, 9_000_008, 9_000_009]  # no real destination has these

    kick_all(destinations)

    for destination_id in destinations:
        assert _drain_messages(destination_id) == [destination_id]


@pytest.mark.broker
def test_a_kick_is_in_its_queue_when_kick_all_returns_a_new_destinations_too():
    """kick_all returns once the broker has taken its kicks, so another connection's purge or
    get, right after it, finds them. A new destination's queue is made as its first kick
    goes; that kick once went out last, unconfirmed, and could still be on its way.

    Counted by the purge, not by a passive declare: a queue answers the declare's count ahead
    of the messages already handed to it (RabbitMQ gives its `stat` call priority), so that
    count may miss a kick the broker has taken; the purge is answered in order."""
    with current_app.connection_for_read() as connection:
        channel = connection.default_channel
        for destination_id in range(9_000_100, 9_000_140):  # new queues, each
            kick_all([destination_id])
            assert channel.queue_purge(delivery_queue(destination_id)) == 1
            channel.queue_delete(delivery_queue(destination_id))


@pytest.mark.broker
def test_kicks_are_transient_messages_the_broker_keeps_in_memory_only():
    """Hints, not records: a broker restart may lose them (the sweeper re-kicks), and RabbitMQ
    writes none of them to disk."""
    modes = []

    kick(9_000_010)
    kick_all([9_000_011])

    assert _drain_messages(9_000_010, modes) + _drain_messages(9_000_011, modes) != []
    assert modes == [TRANSIENT, TRANSIENT]


@pytest.mark.broker
def test_the_sweeper_re_kicks_only_destinations_whose_kick_is_not_on_its_way(small_games, subscribe, clean_redis,
                                                                            monkeypatch):
    """While a fan-out drains, its kicks wait in their queues: re-kicking every destination
    owed work for more than 3 s doubled the drain tasks. A drain that starts clears the mark."""
    ids = [subscribe(small_games, webhook_settings("http://127.0.0.1:9/k")).pk for _ in range(3)]  # each kicked
    DeliveryState.objects.update(wanted_at=timezone.now() - timedelta(minutes=5))
    swept = []
    monkeypatch.setattr(tasks, "kick_all", swept.append)

    def sweep() -> list[int]:
        swept.clear()
        tasks.sweep_deliveries()
        return sorted(swept[0])

    assert sweep() == []
    kicks.arrived(ids[1])  # its drain started (and, here, ended with the work still owed)
    assert sweep() == [ids[1]]
    assert sweep() == []  # the sweeper's own kick is on its way now
    kicks.forget_all_on_their_way()  # a delivery worker reconnected: the broker may have lost them
    assert sweep() == sorted(ids)


def test_the_sweeper_does_not_kick_a_destination_drained_since_it_read_the_idle_ones(small_games, subscribe,
                                                                                     clean_redis, receiver,
                                                                                     monkeypatch):
    """Under load a sweep's steps are seconds apart: a destination read as idle, then drained
    (its mark cleared, nothing owed) before its mark is looked at, looked unkicked."""
    ids = [subscribe(small_games, webhook_settings(receiver.url)).pk for _ in range(2)]
    DeliveryState.objects.update(wanted_at=timezone.now() - timedelta(minutes=5))
    for destination_id in ids:
        kicks.arrived(destination_id)  # both drains started, and ended with the work still owed
    swept = []
    monkeypatch.setattr(tasks, "kick_all", swept.append)
    # Between the read of the idle destinations and their marks, the first one is drained.
    monkeypatch.setattr(tasks.queues, "announce", lambda *args, **kwargs: sender.drain(ids[0]))

    tasks.sweep_deliveries()

    assert swept == [[ids[1]]]
    assert not redis_client().exists(redis_keys.kick_on_its_way(ids[0]))  # no mark without a kick on its way


@pytest.mark.broker
def test_a_drain_clears_its_kick_mark_whether_it_sends_or_not(small_games, subscribe, clean_redis, receiver):
    """A drain that sends clears the mark with its first send's status (one round trip); one
    that sends nothing, or finds the lease taken, clears it on its own."""
    def marked(destination_id) -> bool:
        return bool(redis_client().exists(redis_keys.kick_on_its_way(destination_id)))

    sending = subscribe(small_games, webhook_settings(receiver.url)).pk
    assert marked(sending)  # provisioning kicked it
    assert sender.drain(sending) == sender.Outcome.DRAINED
    assert not marked(sending)

    kick(sending)  # nothing owed any more
    assert marked(sending)
    assert sender.drain(sending) == sender.Outcome.IDLE
    assert not marked(sending)

    kick(sending)
    token = lease.acquire(sending)  # another sender holds it
    try:
        assert sender.drain(sending) == sender.Outcome.BUSY
    finally:
        lease.release(sending, token)
    assert not marked(sending)


@pytest.mark.broker
def test_a_kick_finds_its_queue_whether_or_not_the_queue_existed_before():
    """Kicks are published without declaring their queues; RabbitMQ returns the kick of a queue
    that does not exist (a new destination's), which is then declared and kicked again."""
    existing, new = 9_000_021, 9_000_022
    with current_app.connection_for_write() as connection:
        connection.default_channel.queue_delete(delivery_queue_declaration(new).name)  # left by an earlier run
    kick_all([existing])
    assert _drain_messages(existing) != []  # the queue exists now, and is empty

    kick_all([existing, new, existing])

    assert _drain_messages(existing) == [existing] * 2
    assert _drain_messages(new) == [new]


@pytest.mark.broker
def test_kicks_through_a_pooled_connection_the_broker_closed_still_arrive():
    """A builder's pooled connection idle for minutes may be closed by RabbitMQ (missed
    heartbeats); the first kicks after that are not lost on it."""
    kick_all([9_000_031])
    _drain_messages(9_000_031)  # the pool holds an open connection now
    assert broker.close_connections(settings.CELERY_BROKER_MANAGEMENT_URL, current_app.conf.broker_url) > 0

    kick_all([9_000_031, 9_000_032])

    assert _drain_messages(9_000_031) == [9_000_031]
    assert _drain_messages(9_000_032) == [9_000_032]


@pytest.mark.broker
def test_kicks_are_marked_on_their_way_before_they_are_published(clean_redis, monkeypatch):
    """Publishing thousands of kicks takes seconds; a sweep in the meantime must see them marked."""
    destinations = [9_000_051, 9_000_052]
    marked_when_published = []
    publish = kicks._publish

    def publish_seeing_the_marks(producer, destination_ids, mandatory=False):
        marked_when_published.extend(bool(redis_client().exists(redis_keys.kick_on_its_way(d))) for d in destination_ids)
        publish(producer, destination_ids, mandatory)

    monkeypatch.setattr(kicks, "_publish", publish_seeing_the_marks)
    kick_all(destinations)

    assert marked_when_published and all(marked_when_published)  # (twice each when their queues are new)
    assert [_drain_messages(d) for d in destinations] == [[d]
                                                          for d in destinations]


def test_kicks_the_broker_did_not_take_leave_no_mark(clean_redis, monkeypatch):
    """A mark says a kick is on its way: a mark left for a kick never sent would keep the
    sweeper from re-kicking its destination until the mark expired."""
    monkeypatch.setattr(current_app.conf, "broker_url", f"amqp://guest:guest@127.0.0.1:{free_port()}//")
    monkeypatch.setitem(current_app.conf, "broker_connection_timeout", 0.5)  # how long kombu tries to connect
    monkeypatch.setattr(current_app, "_pool", None)
    monkeypatch.setattr(current_app.amqp, "_producer_pool", None)

    kick_all([9_000_061, 9_000_062])  # no broker answers there: logged, not raised

    assert not redis_client().exists(redis_keys.kick_on_its_way(9_000_061), redis_keys.kick_on_its_way(9_000_062))


def test_only_a_positive_whole_number_is_read_as_a_kick():
    assert kicks.destination_of_kick(4_321) == 4_321
    for other in (0, -1, 1.0, True, "1", [1], [[1], {}, {}], {"destination_id": 1}, None):
        assert kicks.destination_of_kick(other) is None, other
