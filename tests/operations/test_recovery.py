"""Recovery in seconds: a worker that dies, or freezes and wakes, hands its work over within
10 s, and a frozen sender that wakes up never makes an older file visible after a newer one."""

import hashlib
import os
import signal
import threading
import time
from contextlib import contextmanager

import pytest
from django.db import connection, transaction

from devtools.loopback.hosts import QuietHandler, serve_http
from devtools.loopback.servers import freeze, thaw
from devtools.waiting import wait_until
from omnium.alerts import worker_heartbeats
from omnium.alerts.models import Alert
from omnium.delivery.models import DeliveryAttempt, DeliveryState
from omnium.feeds.models import FeedDocument, PendingBuild
from omnium.games import workflow
from omnium.games.models import Fixture, MedalEvent, StatJob
from omnium.routing import BUILD_LANES, DELIVERY_CONTROL_QUEUE, STAT_LANES, build_queue, stats_queue
from tests import child_processes
from tests.delivery.fixtures import webhook_settings
from tests.games.test_stat_jobs import award_gold_to_the_winner
from tests.pullapi.servers import PrivateRedis

pytestmark = pytest.mark.worker

# The promise: from a worker's death (or a frozen sender's loss of its lease) to the next
# version confirmed at the client.
RECOVERY_S = 10.0
FAST = {"OMNIUM_SWEEP_INTERVAL_S": 0.5}
REDIS_OUTAGE_S = 30.0
BUILD_QUEUES = [build_queue(lane) for lane in BUILD_LANES]
STATS_QUEUES = [stats_queue(lane) for lane in STAT_LANES]


class FirstRequestHeldReceiver:
    """A webhook receiver that holds the first request until released; the rest it answers."""

    def __init__(self):
        self.release, self.first_arrived, self.versions = threading.Event(), threading.Event(), []
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self):
                self.read_body()
                if not receiver.first_arrived.is_set():
                    receiver.first_arrived.set()
                    receiver.release.wait(30)
                receiver.versions.append(int(self.headers["omnium-version"]))
                self.answer()

        self.http = serve_http(Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/hook"

    def stop(self):
        self.release.set()
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def holding_receiver():
    receiver = FirstRequestHeldReceiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def started():
    """Processes a test starts; all stopped (or already killed) after it."""
    processes = []
    yield processes
    for process in reversed(processes):
        os.killpg(process.pid, signal.SIGCONT) if process.running() else None
        process.stop()


def new_version(games, value) -> int:
    """Record a score and return the calendar's version before it (the new one is higher)."""
    before = calendar_seq(games)
    fixture = Fixture.objects.filter(games=games).order_by("starts_at", "id").first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: value})
    return before


def calendar_seq(games) -> int:
    return FeedDocument.objects.get(doc_key=f"{games.code}/calendar").seq


def confirmed_after(destination, seq) -> bool:
    return DeliveryState.objects.filter(destination=destination, sent_seq__gt=seq).exists()


def test_a_sender_killed_mid_send_hands_its_destination_over_within_10_s(small_games, subscribe, holding_receiver,
                                                                         started, clean_redis):
    started += [child_processes.start_worker(BUILD_QUEUES, "builds", **FAST), child_processes.start_beat(**FAST)]
    doomed = child_processes.start_delivery_worker("delivery-doomed", **FAST)
    started.append(doomed)
    destination = subscribe(small_games, webhook_settings(holding_receiver.url, send_timeout=30))
    assert holding_receiver.first_arrived.wait(15), "a send in progress"
    started.append(child_processes.start_delivery_worker("delivery-survivor", **FAST))

    doomed.kill()  # mid-send: the receiver still holds its request
    killed_at = time.monotonic()
    before = new_version(small_games, 71)

    wait_until(lambda: confirmed_after(destination, before), 30, message="the next version confirmed")
    assert time.monotonic() - killed_at < RECOVERY_S


@contextmanager
def rows_held(sql: str, params):
    """While inside, another connection holds the rows `sql` locks: whoever writes them waits."""
    holding, release = threading.Event(), threading.Event()

    def hold():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            holding.set()
            release.wait(30)
        connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(5), "the rows locked"
    try:
        yield
    finally:
        release.set()
        thread.join(10)


def kill_once_stuck(doomed, what: str) -> float:
    """Kill `doomed` once a session waits on our lock (the worker stuck mid-work); when."""
    wait_until(_waiting_on_a_lock, 15, message=f"{what} stuck mid-work")
    doomed.kill()
    return time.monotonic()


def _waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()"
                       " AND wait_event_type = 'Lock')")
        return cursor.fetchone()[0]


def test_a_builder_killed_mid_build_hands_its_file_over_within_10_s(small_games, subscribe, receiver, started,
                                                                    clean_redis):
    started += [child_processes.start_delivery_worker("delivery", **FAST), child_processes.start_beat(**FAST)]
    doomed = child_processes.start_worker(BUILD_QUEUES, "builds-doomed", **FAST)
    started.append(doomed)
    destination = subscribe(small_games, webhook_settings(receiver.url))
    wait_until(lambda: DeliveryState.objects.filter(destination=destination, sent_seq=calendar_seq(small_games))
               .exists(), 15, message="the first version sent")
    doc_key = f"{small_games.code}/calendar"
    with rows_held("SELECT 1 FROM feeds_feeddocument WHERE doc_key = %s FOR UPDATE", [doc_key]):
        before = new_version(small_games, 72)
        wait_until(_waiting_on_a_lock, 15, message="the builder stuck saving the calendar")
        # As on a real day, another worker is up when one dies: its start-up is no part of the handover.
        started.append(child_processes.start_worker(BUILD_QUEUES, "builds-survivor", **FAST))
        killed_at = kill_once_stuck(doomed, "the builder, saving the calendar,")
        assert PendingBuild.objects.filter(doc_key=doc_key, claim_token__isnull=False).exists()

    wait_until(lambda: confirmed_after(destination, before), 30, message="the next version confirmed")
    assert time.monotonic() - killed_at < RECOVERY_S


def test_a_stat_job_killed_mid_run_is_run_again_within_10_s(small_games, started, clean_redis):
    started += [child_processes.start_beat(**FAST)]
    doomed = child_processes.start_worker(STATS_QUEUES, "stats-doomed", **FAST)
    started.append(doomed)
    event = MedalEvent.objects.filter(games=small_games, fixtures__is_medal_fixture=True).order_by("code").first()
    # The medal standings job writes the Games' medal table; a lock on it stops the job mid-run.
    with rows_held("SELECT 1 FROM games_medalstanding WHERE games_id = %s FOR UPDATE", [small_games.pk]):
        award_gold_to_the_winner(event)
        job = wait_until(lambda: StatJob.objects.filter(state=StatJob.State.RUNNING).first(), 15,
                         message="the stat job running")
        wait_until(_waiting_on_a_lock, 15, message="the stat job stuck mid-run")
        started.append(child_processes.start_worker(STATS_QUEUES, "stats-survivor", **FAST))
        killed_at = kill_once_stuck(doomed, "the stat job")

    wait_until(lambda: StatJob.objects.filter(pk=job.pk, state=StatJob.State.DONE).exists(), 30,
               message="the stat job done")
    assert time.monotonic() - killed_at < RECOVERY_S
    assert StatJob.objects.get(pk=job.pk).attempts == 2, "the dead worker's attempt, then one more"


@pytest.mark.servers
def test_a_frozen_sender_that_wakes_never_overwrites_its_successors_newer_file(small_games, subscribe, sftp_kit,
                                                                                sftp_server, started, clean_redis):
    started += [child_processes.start_worker(BUILD_QUEUES, "builds", **FAST), child_processes.start_beat(**FAST)]
    frozen = child_processes.start_delivery_worker("delivery-frozen", **FAST)
    started.append(frozen)
    destination = subscribe(small_games, ("sftp", sftp_kit.config(), sftp_kit.credentials()))
    wait_until(lambda: confirmed_after(destination, calendar_seq(small_games) - 1), 15, message="first version sent")

    sessions = sftp_server.session_pids()
    freeze(sessions)  # the server stops answering: the sender blocks in its next upload
    try:
        older = new_version(small_games, 73)
        wait_until(lambda: DeliveryAttempt.objects.filter(destination=destination, seq__gt=older, ok=None).exists(),
                   15, message="the sender blocked mid-send of the next version")
        os.killpg(frozen.pid, signal.SIGSTOP)
    finally:
        thaw(sessions)
    started.append(child_processes.start_delivery_worker("delivery-successor", **FAST))
    newest_before = new_version(small_games, 74)
    wait_until(lambda: confirmed_after(destination, newest_before), 30, message="the successor sent the newest")

    os.killpg(frozen.pid, signal.SIGCONT)  # the zombie wakes and finishes its older upload
    wait_until(lambda: DeliveryAttempt.objects.filter(destination=destination, seq__gt=older, seq__lte=newest_before,
                                                      ok=False).exists(), 30, message="the zombie's send refused")

    state = DeliveryState.objects.get(destination=destination)
    assert state.sent_seq == calendar_seq(small_games) > newest_before
    held = sftp_kit.read_back(state.sent_path)
    assert hashlib.sha256(held).digest() == bytes(state.sent_bytes_sha256), "the receiver holds the newest bytes"


@pytest.mark.servers
def test_workers_ride_out_a_30_s_redis_outage_and_push_on_through_it(small_games, subscribe, receiver, sftp_kit,
                                                                      started):
    private = PrivateRedis()  # the workers' Redis, ours to stop (never the machine's own)
    env = {**FAST, "REDIS_URL": private.url}
    started += [child_processes.start_worker(BUILD_QUEUES + STATS_QUEUES, "builds", **env),
                child_processes.start_delivery_worker("delivery", **env), child_processes.start_beat(**env)]
    destinations = [subscribe(small_games, webhook_settings(receiver.url)),
                    subscribe(small_games, ("sftp", sftp_kit.config(), sftp_kit.credentials()))]
    wait_until(lambda: all(confirmed_after(d, calendar_seq(small_games) - 1) for d in destinations), 15,
               message="first versions sent")

    def push_while_redis_is_down():
        before = new_version(small_games, 75)
        wait_until(lambda: all(confirmed_after(d, before) for d in destinations), 20,
                   message="SFTP and webhook confirmed a new version while Redis was down")

    try:
        private.restart_after(REDIS_OUTAGE_S, during=push_while_redis_is_down)
        back_at = time.monotonic()
        before = new_version(small_games, 76)
        wait_until(lambda: all(confirmed_after(d, before) for d in destinations), RECOVERY_S,
                   message="a version committed after Redis returned, confirmed")
        assert time.monotonic() - back_at < RECOVERY_S
        assert all(process.running() for process in started), "every worker process survived the outage"
    finally:
        private.stop()


def test_the_dead_mans_switch_alerts_within_60_s_when_no_worker_consumes_a_lane(small_games, alert_channels,
                                                                                started, admin_client):
    slack, _ = alert_channels
    env = {**FAST, "OMNIUM_HEARTBEAT_INTERVAL_S": 0.5, "OMNIUM_DEAD_MANS_SWITCH_EVERY_S": 1,
           "OMNIUM_ALERT_SLACK_URL": slack.url}
    started += [child_processes.start_worker(BUILD_QUEUES + STATS_QUEUES + ["alerts"], "builds", **env),
                child_processes.start_beat(**env)]
    doomed = child_processes.start_delivery_worker("delivery", **env)
    started.append(doomed)
    wait_until(lambda: DELIVERY_CONTROL_QUEUE in worker_heartbeats.live_lanes(), 15, message="delivery heartbeat")

    doomed.kill()
    killed_at = time.monotonic()

    alert = wait_until(lambda: Alert.objects.filter(kind="no_worker", subject=f"lane:{DELIVERY_CONTROL_QUEUE}",
                                                    resolved_at__isnull=True).first(), 60, message="the alert")
    wait_until(lambda: any(DELIVERY_CONTROL_QUEUE in post["text"] for post in slack.posts), 60 - (time.monotonic() - killed_at),
               message="the alert's notice on Slack")
    assert time.monotonic() - killed_at < 60
    page = admin_client.get("/admin/delivery/status/").content.decode()
    assert "No worker is consuming" in page and DELIVERY_CONTROL_QUEUE in page

    started.append(child_processes.start_delivery_worker("delivery-back", **env))
    wait_until(lambda: Alert.objects.filter(pk=alert.pk, resolved_at__isnull=False).exists(), 30,
               message="resolved once a worker consumes the lane again")
