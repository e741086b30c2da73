"""Delivery through real Celery workers: isolation, one sender at a time, crashes."""

import re
import socket
import threading
import time
from collections import Counter
from datetime import timedelta

import kombu
import orjson
import pytest
from celery import current_app
from django.conf import settings
from django.db import connection
from django.utils import timezone

from devtools.broker import vhost_listing
from devtools.loopback.hosts import BatchingLink
from devtools.loopback.hosts import HoldingReceiver as SlowReceiver
from devtools.waiting import wait_until
from omnium.clients.models import Client
from omnium.delivery.kicks import kick, kick_all
from omnium.delivery.models import DeliveryAttempt, DeliveryState
from omnium.delivery.worker.kick_consumer import PREFETCH_PER_DESTINATION
from omnium.delivery.worker.queues import announce, consumer_priority
from omnium.feeds.models import FeedDocument, PendingBuild
from omnium.games import workflow
from omnium.games.models import Fixture
from omnium.routing import delivery_queue, delivery_queue_declaration, destination_of
from tests import child_processes
from tests.conftest import ALL_QUEUES
from tests.delivery.fixtures import redis_destination_settings, webhook_settings

pytestmark = pytest.mark.worker


@pytest.fixture
def slow_receiver():
    server = SlowReceiver(hold_s=0.3)
    yield server
    server.stop()


@pytest.fixture
def pipeline(transactional_db, clean_redis):
    """Build workers, one delivery worker and beat (fast sweeps, short leases)."""
    env = {"OMNIUM_SWEEP_INTERVAL_S": 0.5, "OMNIUM_DELIVERY_LEASE_MARGIN_S": 5}
    started = [child_processes.start_worker(ALL_QUEUES, "builds", **env),
               child_processes.start_delivery_worker("delivery", **env),
               child_processes.start_beat("beat", **env)]
    yield started
    for process in reversed(started):
        process.stop()


def score(games, value, nth=0):
    fixture = Fixture.objects.filter(games=games).order_by("starts_at", "id")[nth]
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: value})


def delivered(destination, seq) -> bool:
    return DeliveryState.objects.filter(destination=destination, sent_seq__gte=seq).exists()


def calendar_seq(games) -> int:
    return FeedDocument.objects.get(doc_key=f"{games.code}/calendar").seq


# `silent_host` after `pipeline`: torn down first, so the hanging send ends and the workers stop
# at once instead of waiting out their 15 s for it.
def test_a_hanging_destination_slows_nobody_else(small_games, subscribe, pipeline, silent_host):
    hanging = subscribe(small_games, webhook_settings(f"http://127.0.0.1:{silent_host.port}/x", send_timeout=30))
    healthy = [subscribe(small_games, redis_destination_settings()) for _ in range(3)]
    wait_until(lambda: all(delivered(d, calendar_seq(small_games)) for d in healthy), 10, message="first sends")

    seq_before = calendar_seq(small_games)
    score(small_games, 99)
    new_seq = wait_until(lambda: calendar_seq(small_games) > seq_before and calendar_seq(small_games), 10)
    built_at = time.monotonic()
    wait_until(lambda: all(delivered(d, new_seq) for d in healthy), 5, message="healthy destinations served")

    assert time.monotonic() - built_at < 2.0
    assert not delivered(hanging, new_seq)
    assert DeliveryAttempt.objects.filter(destination=hanging, ok=None).exists(), "the hanging send is still stuck"


def test_a_delivery_worker_drains_in_its_pool_and_acknowledges_each_kick_after_its_drain(
        small_games, subscribe, slow_receiver, pipeline):
    """kick_consumer: the drain runs in the worker's thread pool, the attempt names the worker,
    a kick stays unacknowledged while its drain runs (a worker that dies returns it), and the
    destination's queue is among those the worker reports (Flower's broker view lists them)."""
    # Held until the count is seen (RabbitMQ's management API refreshes its counts every 5 s, later
    # on a busy machine), and below the send timeout so the held send still succeeds.
    slow_receiver.hold_s = 12.0
    destination = subscribe(small_games, webhook_settings(slow_receiver.url("strategy"), send_timeout=15))
    wait_until(lambda: slow_receiver.received, 10, message="a send in progress")
    queue_name = delivery_queue(destination.pk)

    def unacknowledged() -> int:
        queues = vhost_listing(settings.CELERY_BROKER_MANAGEMENT_URL, settings.CELERY_BROKER_URL, "queues")
        return next(q.get("messages_unacknowledged", 0) for q in queues if q["name"] == queue_name)

    wait_until(lambda: unacknowledged() == 1, 11, interval=0.5, message="the kick held while its drain runs")
    slow_receiver.release.set()
    wait_until(lambda: delivered(destination, calendar_seq(small_games)), 10, message="sent")
    wait_until(lambda: unacknowledged() == 0, 10, interval=0.5, message="the kick acknowledged after its drain")
    worker = f"delivery@{socket.gethostname()}"
    workers = set(DeliveryAttempt.objects.filter(destination=destination).values_list("worker", flat=True))
    assert workers == {worker}
    reported = current_app.control.inspect(destination=[worker], timeout=5).active_queues()[worker]
    assert {"deliver.control", queue_name} <= {queue["name"] for queue in reported}


def test_two_worker_processes_never_send_for_one_destination_at_once(small_games, subscribe, slow_receiver,
                                                                     pipeline):
    second = child_processes.start_delivery_worker("delivery-2", OMNIUM_DELIVERY_LEASE_MARGIN_S=5)
    try:
        destination = subscribe(small_games, webhook_settings(slow_receiver.url("one")),
                                feed_types=("calendar", "results", "entries", "participants", "medals"))
        for _ in range(40):  # a storm of kicks, to both workers
            kick(destination.pk)
        for value in range(3):
            score(small_games, value + 1, nth=value)
        wait_until(lambda: not DeliveryState.objects.filter(destination=destination, sent_seq=0).exists()
                   and DeliveryAttempt.objects.filter(destination=destination, ok=True).count() >= 5, 20)
    finally:
        second.stop()
    assert slow_receiver.max_in_flight["/one"] == 1


def test_a_worker_killed_mid_send_loses_nothing_and_the_proof_is_recorded_once(small_games, subscribe,
                                                                               slow_receiver, pipeline):
    builds, delivery, beat = pipeline
    slow_receiver.hold_s = 2.0
    destination = subscribe(small_games, webhook_settings(slow_receiver.url("kill"), send_timeout=5))
    wait_until(lambda: slow_receiver.received, 10, message="a send in progress")

    delivery.kill()  # mid-send: the receiver is still holding the request
    replacement = child_processes.start_delivery_worker("delivery-after-kill", OMNIUM_DELIVERY_LEASE_MARGIN_S=5)
    try:
        wait_until(lambda: delivered(destination, calendar_seq(small_games)), 30, message="delivered after the crash")
    finally:
        replacement.stop()
    state = DeliveryState.objects.get(destination=destination)
    assert state.sent_seq == calendar_seq(small_games)
    assert DeliveryAttempt.objects.filter(destination=destination, ok=True).count() == 1


def test_a_lost_kick_is_made_up_for_by_the_sweep_a_worker_asks_for_as_it_connects(small_games, subscribe,
                                                                                   clean_redis):
    """The kick is lost (its queue purged, as a broker restart loses transient messages, and
    Redis flushed, marks and all): the sweep the delivery worker asks for as it connects finds
    the destination owed in PostgreSQL and kicks it again; no beat runs."""
    destination = subscribe(small_games, redis_destination_settings())  # owed, kicked; nobody listening
    with kombu.Connection(settings.CELERY_BROKER_URL) as connection:
        channel, queue = connection.default_channel, delivery_queue(destination.pk)
        delivery_queue_declaration(destination.pk)(channel).declare()  # it may not exist yet: the kick declares it
        wait_until(lambda: channel.queue_declare(queue, passive=True).message_count == 1, 5, message="the kick queued")
        channel.queue_purge(queue)  # the kick, gone
    clean_redis.flushdb()
    # Owed since before the loss: the sweeper leaves work younger than 3 s to the kick sent with it.
    DeliveryState.objects.filter(destination=destination).update(wanted_at=timezone.now() - timedelta(minutes=1))
    worker = child_processes.start_delivery_worker("delivery-lost-kick", OMNIUM_SWEEP_INTERVAL_S=0.5)
    try:
        wait_until(lambda: delivered(destination, calendar_seq(small_games)), 15, message="delivered after the sweep")
        assert re.search(r"sweep_deliveries\[\S+\] succeeded in \S+ \{'kicked': 1", worker.output_since_start()), \
            "re-kicked by the worker's own sweep"
    finally:
        worker.stop()


def test_kicks_and_broadcasts_arriving_as_a_delivery_worker_starts_all_reach_it(small_games, subscribe,
                                                                                  clean_redis):
    """The broker sends a queue's waiting messages right behind the reply that starts its
    consumer; over a slow link both arrive in one receive. Each must reach its consumer: none
    rejected for reaching the channel before the consumer was registered (a delivery worker
    that read ahead past that reply once did so: its kicks were requeued out of order, and a
    broadcast on the control channel, which takes no acknowledgement, closed its connection).
    No beat runs, so a kick that never arrives is a destination never served."""
    destinations = [subscribe(small_games, redis_destination_settings()) for _ in range(12)]  # owed
    ids = [destination.pk for destination in destinations]
    with kombu.Connection(settings.CELERY_BROKER_URL) as connection:
        for destination_id in ids:
            connection.default_channel.queue_purge(delivery_queue(destination_id))
        kick_all(ids)
        # A passive declare's count may lag the kicks the broker has taken (see test_kicks).
        wait_until(lambda: [connection.default_channel.queue_declare(delivery_queue(d), passive=True).message_count
                            for d in ids] == [1] * len(ids), 5, message="one kick each")
    broker = kombu.Connection(settings.CELERY_BROKER_URL)
    link = BatchingLink(broker.port or 5672)
    worker = child_processes.start_delivery_worker(
        "delivery-late", CELERY_BROKER_URL=broker.clone(port=link.port).as_uri(include_password=True))
    try:
        for _ in range(40):  # broadcasts while it starts, as the sweeper's every 2 s
            announce(ids)
            time.sleep(0.05)
        wait_until(lambda: all(delivered(d, calendar_seq(small_games)) for d in destinations), 20,
                   message="every destination served by its waiting kick")
    finally:
        worker.stop()
        link.stop()
    log = worker.output_since_start()
    assert "Rejecting message" not in log
    assert "Connection to broker lost" not in log


def test_one_worker_host_sends_to_32_destinations_in_parallel(small_games, subscribe, slow_receiver, pipeline):
    slow_receiver.hold_s = 2.0
    started = time.monotonic()
    destinations = [subscribe(small_games, webhook_settings(slow_receiver.url(f"d{n}"))) for n in range(32)]

    wait_until(lambda: all(delivered(d, calendar_seq(small_games)) for d in destinations), 20,
               message="32 destinations served")

    assert time.monotonic() - started < 10, "32 sends of 2 s each ran one after another"


def _sessions_opened() -> int:
    """How many connections to the test database have ever been opened (PostgreSQL's count)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def _worker_backends() -> set:
    """The PostgreSQL server processes of everyone else connected to the test database."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                       " AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
        return {row[0] for row in cursor.fetchall()}


def test_workers_keep_their_database_connections_and_survive_losing_them(small_games, subscribe, pipeline):
    builds, delivery, beat = pipeline
    destination = subscribe(small_games, redis_destination_settings())

    def settled() -> bool:
        return not PendingBuild.objects.exists() and delivered(destination, calendar_seq(small_games))

    wait_until(settled, 10, message="first send")
    time.sleep(1)
    opened = _sessions_opened()

    seq_before = calendar_seq(small_games)
    score(small_games, 61)
    wait_until(lambda: calendar_seq(small_games) > seq_before and settled(), 10, message="second version sent")
    time.sleep(1)
    # Some twenty tasks ran meanwhile (beat's sweeps every 0.5 s, the change, the builds, the
    # drain): a connection per task would be as many. A pool thread's first task opens the
    # thread's own (under load the pool may start a thread or two; once, 3 here).
    assert _sessions_opened() - opened <= 4, "the workers opened a connection per task"

    cut = _worker_backends()
    with connection.cursor() as cursor:  # as a database restart or a network cut would
        cursor.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [list(cut)])
    wait_until(lambda: not cut & _worker_backends(), 5, message="the server processes gone")
    # A task caught mid-query by the cut fails, as it must (beat wakes the builders every
    # half second); what must not fail is any task that starts on a connection cut while idle.
    time.sleep(0.5)
    logged = {process: len(process.output_since_start()) for process in (builds, delivery)}
    seq_before = calendar_seq(small_games)
    score(small_games, 62)
    wait_until(lambda: calendar_seq(small_games) > seq_before and settled(), 10, message="sent after the cut")

    for process, offset in logged.items():
        assert "Traceback" not in process.output_since_start()[offset:], process.name


def test_a_client_deleted_while_its_destinations_send_is_deleted_cleanly(small_games, subscribe, slow_receiver,
                                                                         pipeline):
    from omnium.clients.models import Client, Destination

    builds, delivery, beat = pipeline
    slow_receiver.hold_s = 0.02
    feeds = ("calendar", "results", "entries", "participants", "medals")
    ids = [subscribe(small_games, webhook_settings(slow_receiver.url(f"leaving{n}")), feed_types=feeds,
                     client="leaving").pk for n in range(6)]
    wait_until(lambda: len(slow_receiver.received) >= 12, 10, message="sends under way")
    stop = threading.Event()

    def keep_them_sending():  # every file owed again and again, as a busy Games would
        while not stop.is_set():
            DeliveryState.objects.filter(destination_id__in=ids).update(force_resend=True)
            kick_all(ids)
            time.sleep(0.05)
        connection.close()

    busy = threading.Thread(target=keep_them_sending)
    busy.start()
    try:
        time.sleep(1.0)
        logged = len(delivery.output_since_start())
        Client.objects.get(name="leaving").delete()  # what the admin's delete does
    finally:
        stop.set()
        busy.join(5)
    time.sleep(1.0)

    assert not Destination.objects.filter(pk__in=ids).exists()
    assert not DeliveryAttempt.objects.filter(destination_id__in=ids).exists()
    assert not DeliveryState.objects.filter(destination_id__in=ids).exists()
    assert "Traceback" not in delivery.output_since_start()[logged:]


def _broker(kind: str) -> list[dict]:
    return vhost_listing(settings.CELERY_BROKER_MANAGEMENT_URL, settings.CELERY_BROKER_URL, kind)


def test_a_delivery_worker_limits_what_it_holds_per_destination_queue_not_per_channel(
        small_games, subscribe, slow_receiver, pipeline):
    """A limit shared by the channel made RabbitMQ wake every blocked destination queue at each
    acknowledgement (bench/scale.py: 5.6 ms of broker CPU a send with 2,000 destinations)."""
    queues = {delivery_queue(subscribe(small_games, webhook_settings(slow_receiver.url("p"))).pk) for _ in range(3)}

    def consumers():
        return {c["queue"]["name"]: c for c in _broker("consumers") if c["queue"]["name"] in queues}

    # (the management API lists a new consumer's channel details a moment after the consumer)
    wait_until(lambda: len(found := consumers()) == len(queues) and all(
        isinstance(c["channel_details"], dict) for c in found.values()), timeout=15,
        message="the worker consuming the new queues")
    assert {name: c["prefetch_count"] for name, c in consumers().items()} == dict.fromkeys(queues, PREFETCH_PER_DESTINATION)
    channels = {c["channel_details"]["name"] for c in consumers().values()}
    # (and its channels' figures a moment after the channel: wait for them too)
    limits = wait_until(lambda: [ch["global_prefetch_count"] for ch in _broker("channels")
                                 if ch["name"] in channels and "global_prefetch_count" in ch] or None,
                        timeout=15, message="the management API's figures of the worker's channel")
    assert limits == [0]
    worker = f"delivery@{socket.gethostname()}"
    assert {name: c["arguments"].get("x-priority") for name, c in consumers().items()} == {
        name: consumer_priority(worker, destination_of(name)) for name in queues}


def test_each_destination_has_a_first_choice_among_the_delivery_workers_spread_evenly():
    """RabbitMQ gives a queue's messages to its highest-priority consumer with room: without
    priorities, the worker that started first took nearly every send of a fan-out."""
    workers = ["delivery@host-a", "delivery@host-b", "delivery@host-c"]
    first_choices = Counter()
    for destination_id in range(1, 3001):
        priorities = [consumer_priority(worker, destination_id) for worker in workers]
        if priorities.count(max(priorities)) == 1:  # a tie: RabbitMQ takes turns
            first_choices[workers[priorities.index(max(priorities))]] += 1
    assert all(700 < first_choices[worker] < 1100 for worker in workers), first_choices
    assert consumer_priority(workers[0], 7) == consumer_priority(workers[0], 7)  # the same on every start


def test_a_scheduled_subscription_resends_its_unchanged_file_on_time_with_a_proof_each_time(
        small_games, subscribe, receiver, pipeline):
    """Seed 000, the per-subscription schedule: a client that asked for its files every N s gets
    the current version again every N s (10 at least) without any change; one without a schedule
    gets it once."""
    scheduled = subscribe(small_games, webhook_settings(f"{receiver.url}/scheduled"), schedule_seconds=10)
    subscribe(small_games, webhook_settings(f"{receiver.url}/once"))

    def sent_to(path):
        return [d for d in receiver.deliveries if d.path.startswith(f"/feeds/{path}")]

    wait_until(lambda: len(sent_to("scheduled")) >= 3, 40, message="three sends of the scheduled file")
    sent = sent_to("scheduled")
    assert {d.headers["omnium-version"] for d in sent} == {str(calendar_seq(small_games))}, "nothing changed"
    gaps = [later.received_at - earlier.received_at for earlier, later in zip(sent, sent[1:])]
    assert all(9.9 <= gap <= 14 for gap in gaps), f"every 10 s (the sweep finds the timer within 0.5 s): {gaps}"
    assert len(sent_to("once")) == 1
    assert DeliveryAttempt.objects.filter(destination=scheduled, ok=True).count() >= 3, "a proof for each send"


def test_a_client_without_the_marks_gets_files_without_them_and_one_with_the_version_gets_it(
        small_games, subscribe, receiver, pipeline):
    """A client's marks (seed 000): the provisional / official mark of each result kept or
    dropped, the version number put in the file or not; the same file, two clients, two shapes."""
    Client.objects.create(name="plain", include_result_marks=False, include_version=False)
    Client.objects.create(name="marked", include_result_marks=True, include_version=True)
    subscribe(small_games, webhook_settings(f"{receiver.url}/plain"), client="plain")
    subscribe(small_games, webhook_settings(f"{receiver.url}/marked"), client="marked")
    seq = calendar_seq(small_games)

    def last_body(path):
        bodies = [d.body for d in receiver.deliveries if d.path.startswith(f"/feeds/{path}")]
        return orjson.loads(bodies[-1]) if bodies else None

    wait_until(lambda: last_body("plain") and last_body("marked"), 20, message="both shapes delivered")
    assert "version" not in last_body("plain") and not keys_anywhere(last_body("plain"), "result")
    assert last_body("marked")["version"] == seq and keys_anywhere(last_body("marked"), "result")


def keys_anywhere(node, key: str) -> bool:
    if isinstance(node, dict):
        return key in node or any(keys_anywhere(value, key) for value in node.values())
    if isinstance(node, list):
        return any(keys_anywhere(item, key) for item in node)
    return False


def test_a_queue_left_out_of_two_complete_lists_in_a_row_is_dropped_and_one_left_out_once_is_kept(
        small_games, subscribe, transactional_db):
    """The sweeper's complete list is read at one moment: a destination committed just after
    (whatever its id) is missing from it, and dropping its queue then would leave its first
    kick waiting for the next sweep. Left out of the next list too, it was deleted: its queue
    is dropped, and expires, instead of being consumed for ever."""
    made_late, listed, deleted = (subscribe(small_games, webhook_settings("http://127.0.0.1:9/q")).pk for _ in range(3))
    marker = deleted + 10_000  # no such destination: its queue being consumed shows a list was handled
    delivery = child_processes.start_delivery_worker("delivery-lists")
    try:
        worker = f"delivery-lists@{socket.gethostname()}"

        def consumed() -> set[int]:
            reported = current_app.control.inspect(destination=[worker], timeout=5).active_queues() or {}
            return {destination_of(queue["name"]) for queue in reported.get(worker, [])} - {None}

        wait_until(lambda: consumed() >= {made_late, listed, deleted}, 15, message="every destination's queue consumed")
        # The sweep a worker asks for as it connects lists all three: let its list go first.
        wait_until(lambda: re.search(r"sweep_deliveries\[\S+\] succeeded", delivery.output_since_start()), 15,
                   message="the worker's first sweep done")
        time.sleep(1)
        announce([listed, marker], complete=True)  # read before `made_late` committed and after `deleted` went
        wait_until(lambda: marker in consumed(), 15, message="the first list handled")
        assert {made_late, listed, deleted} <= consumed()
        announce([made_late, listed], complete=True)  # the next sweep's list
        wait_until(lambda: deleted not in consumed(), 15, message="the deleted destination's queue dropped")
        assert {made_late, listed, marker} <= consumed()  # the marker was left out once only
    finally:
        delivery.stop()
