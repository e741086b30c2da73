"""Kicks: hints that a destination has owed work. Safe to send any number of times.

A kick is a small message on the destination's own queue (`deliver.<id>`) whose body is the
destination id as JSON, published through kombu's Producer; a delivery worker's consumer
step takes it (delivery.worker.kick_consumer). Every module that kicks (fan-out, the control actions,
the sender itself) depends on this small module. A lost kick costs only time: the sweeper
re-kicks from PostgreSQL.

So kicks are transient messages (in durable queues): RabbitMQ keeps them in memory, and
writes none of them to disk. A broker restart loses the waiting ones, and the sweeper
re-kicks their destinations once their marks below are forgotten (at once after a delivery
worker reconnects: see delivery.worker.kick_consumer).

Each kick leaves a mark in Redis, "a kick is on its way", which the destination's next drain
clears as it ends. The sweeper re-kicks only destinations without one: while a fan-out to
thousands of destinations drains, their kicks wait in their queues for a free sender, and
re-kicking them all (they had been owed for more than the sweeper's 3 s) doubled the work:
2,000 destinations, 1,765 extra drain tasks, each finding nothing to send or the lease taken.
"""

import functools

from celery import current_app
from redis.exceptions import RedisError

from omnium import redis_keys
from omnium.messaging import hints, outage
from omnium.redis_client import redis_client
from omnium.routing import delivery_queue, delivery_queue_declaration, destination_of

TRANSIENT = 1  # AMQP delivery mode: kept in memory only

# How long a mark lasts: a kick not drained after this long is taken for lost (or held by a
# worker that froze: the sweeper's kick may reach another one), plus the time the delivery
# workers take to drain a batch of this many kicks (about 200 a second on a 2-core machine,
# bench/scale.py), so that a fan-out to 5,000 destinations is not kicked twice.
ON_ITS_WAY_S = 10
KICKS_DRAINED_PER_S = 200

# Kicks to this many new queues at most are waited for (see _taken_by_the_broker): RabbitMQ
# creates a durable queue in about 8 ms on this machine, so a bulk provisioning's 19,500 new
# queues held the round trip for minutes, past the socket's timeout (bench/scale.py at 20,000
# destinations); such kicks go without the wait, and the sweeper covers one lost on the way.
CONFIRMED_NEW_QUEUES = 200


def _on_its_way_s(batch_size: int) -> int:
    return ON_ITS_WAY_S + batch_size // KICKS_DRAINED_PER_S


def kick(destination_id: int) -> None:
    """Hint the destination's sender that it has owed work."""
    kick_all([destination_id])


def kick_soon(destination_ids) -> None:
    """Kick these destinations from this process's hint thread: for a request or a post-commit
    hook, which must never wait for the broker (omnium.messaging.hints)."""
    ids = sorted(destination_ids)
    if ids:
        hints.send_soon("kicks", lambda: kick_all(ids))


def kick_all(destination_ids) -> None:
    """Kick many destinations through one broker connection, in one pipelined batch.

    A version owed to 500 destinations is 500 messages. Taking a pooled connection for each
    cost about 3 ms; and one round trip each cost a builder about 10 ms a kick under load
    (0.2 s for 20 destinations, after every version, before it could build the next file).

    The marks come first: a builder busy with 5,000 kicks took 9 s to publish them on a
    loaded machine, and a sweep meanwhile saw thousands of destinations owed for more than
    3 s with no mark, and kicked them a second time (3,397 drain tasks that found nothing)."""
    ids = list(destination_ids)
    if not ids:
        return
    _mark_on_its_way(ids)
    for last_try in (False, True):
        try:
            _kick_through_one_connection(ids)
            outage.succeeded()
            return
        except Exception as error:  # the broker may be down; the sweeper re-kicks from PostgreSQL
            if last_try:
                outage.failed(f"kicks to {len(ids)} destinations", error)
                forget_marks(ids)  # none of these kicks is on its way (as far as we know)
                return
            # A pooled connection idle for minutes may be gone (RabbitMQ closes one that missed
            # its heartbeats): the pool replaced it, so try once more. Kicks sent twice are harmless.


def _kick_through_one_connection(ids: list[int]) -> None:
    with current_app.producer_or_acquire() as producer:
        missing = _publish_where_queues_exist(producer, ids)
        if missing:
            _declare_without_waiting(producer, [delivery_queue_declaration(d) for d in missing])
            _publish(producer, missing)
            if len(missing) <= CONFIRMED_NEW_QUEUES:
                _taken_by_the_broker(producer.channel)


def destination_of_kick(body) -> int | None:
    """The destination id a kick's decoded body names; None for any other message."""
    return body if type(body) is int and body > 0 else None


def _publish(producer, destination_ids, mandatory: bool = False) -> None:
    """One kick on each destination's queue (through the default exchange, which routes to
    the queue of the same name)."""
    with producer.batch():
        for destination_id in destination_ids:
            producer.publish(destination_id, exchange="", routing_key=delivery_queue(destination_id),
                             serializer="json", delivery_mode=TRANSIENT, mandatory=mandatory)


def _publish_where_queues_exist(producer, destination_ids) -> list[int]:
    """Kick these destinations without declaring their queues; returns those whose queue did
    not exist (RabbitMQ returned their kick).

    Declaring a queue that exists is three methods the broker answers (exchange, queue,
    binding): once per queue and connection, it was two thirds of a kick's cost, and a build
    worker's first fan-out to 5,000 destinations took 14.5 s to kick them all while the
    senders waited for their kicks and the CPU. Every destination's queue exists as long as a
    delivery worker consumes it, so only a new destination's (or one expired with no worker
    for a day) is missing: its kick, published `mandatory`, comes back."""
    channel = producer.channel
    returned = []

    def on_return(exception, exchange, routing_key, message):
        returned.append(destination_of(routing_key))

    channel.events["basic_return"].add(on_return)
    try:
        _publish(producer, destination_ids, mandatory=True)
        _taken_by_the_broker(channel)  # the kicks it could not route have come back by now
    finally:
        channel.events["basic_return"].discard(on_return)
    return [destination_id for destination_id in returned if destination_id is not None]


def _taken_by_the_broker(channel) -> None:
    """Return once RabbitMQ has taken every message published on `channel` so far, or raise if
    the connection is gone. A round trip (a QoS change that changes nothing): the broker
    handles a channel's methods in order and routes each publish as it takes it, so its
    answer comes after every publish before it. So a kick_all that returned has its kicks in
    their queues (a new destination's too: a purge right after it, as in a test, once raced
    a kick still on its way and left it behind; a passive declare's message count may still
    miss them, as the queue answers that ahead of its waiting work), and a connection the broker had just closed
    raises here, and the caller tries again, instead of losing kicks without an error."""
    channel.basic_qos(0, 0, False)


def _mark_on_its_way(destination_ids) -> None:
    try:
        _set_marks(destination_ids, only_unmarked=False)
    except RedisError:  # unmarked, the sweeper may kick again: a duplicate, never a loss
        pass


def without_a_kick_on_its_way(destination_ids: list[int]) -> list[int]:
    """Those of these destinations with no kick on its way, marked now as the caller is about
    to kick them (one pipelined round trip: after an outage all 5,000 can be waiting)."""
    try:
        unmarked = _set_marks(destination_ids, only_unmarked=True)
    except RedisError:  # without Redis, kick them all: duplicates are harmless, losses are not
        return list(destination_ids)
    return [destination_id for destination_id, new in zip(destination_ids, unmarked, strict=True) if new]


# Sets each mark (with `only_unmarked`, only where none is) and answers 1 where it set one.
# A script, not a pipeline of SETs: redis-py builds and parses each pipelined command in Python,
# and the sweeper's 5,000 took a delivery worker 60-160 ms every 2 s of a fan-out (the
# builder's kick of a 5,000-way fan-out as much); one script call per thousand is a few ms.
SET_MARKS = """
local set = {}
for i, key in ipairs(KEYS) do
  if ARGV[2] == '1' then
    set[i] = redis.call('SET', key, 1, 'EX', ARGV[1], 'NX') and 1 or 0
  else
    redis.call('SET', key, 1, 'EX', ARGV[1])
    set[i] = 1
  end
end
return set
"""
MARKS_PER_CALL = 1000  # Redis runs a script alone: a thousand SETs hold it for about a millisecond


def _set_marks(destination_ids, only_unmarked: bool) -> list[bool]:
    """A mark per destination; with `only_unmarked`, whether each was newly set."""
    ids = list(destination_ids)
    client = redis_client()
    script = _set_marks_script(client)
    pipe = client.pipeline(transaction=False)
    for start in range(0, len(ids), MARKS_PER_CALL):
        script(keys=[redis_keys.kick_on_its_way(destination_id) for destination_id in ids[start:start + MARKS_PER_CALL]],
               args=[_on_its_way_s(len(ids)), int(only_unmarked)], client=pipe)
    return [bool(new) for answers in pipe.execute() for new in answers]


@functools.cache
def _set_marks_script(client):
    return client.register_script(SET_MARKS)


def forget_all_on_their_way() -> None:
    """Every mark, as when the broker may have lost the kicks (see delivery.worker.kick_consumer)."""
    try:
        client = redis_client()
        keys = list(client.scan_iter(match=redis_keys.kick_on_its_way("*"), count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start:start + 1000])
    except RedisError:
        pass


def forget_marks(destination_ids: list[int]) -> None:
    """These destinations' marks: no kick of theirs is on its way after all."""
    if not destination_ids:
        return
    try:
        redis_client().delete(*(redis_keys.kick_on_its_way(destination_id) for destination_id in destination_ids))
    except RedisError:  # marked without a kick, the sweeper waits out the mark: time, not a loss
        pass


def arrived(destination_id: int) -> None:
    """A drain of this destination ran: the kicks sent before it began have done their work."""
    forget_marks([destination_id])


def _declare_without_waiting(producer, queues) -> None:
    """Declare these queues (their kicks came back: they do not exist), without waiting for
    the answers.

    Creating a new durable queue took RabbitMQ 8 ms (on a loaded 2-core machine), so waiting
    for each made provisioning 300 destinations wait 5 s in their first kicks. Sent without
    waiting they took 3.6 ms each of the broker's time and none of ours; the publishes follow
    on the same channel, so each arrives after its queue exists."""
    for queue in queues:
        queue(producer.channel).declare(nowait=True)
