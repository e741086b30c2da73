"""Pause, resume and health through real delivery workers; status screens; refusals."""

import os
import subprocess
import sys
import time

import pytest
from django.core.exceptions import ValidationError

from devtools.waiting import wait_until
from omnium.clients.models import Client
from omnium.delivery import health, heartbeats
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryAttempt, DeliveryState
from omnium.delivery.operations import control
from omnium.feeds.models import FeedDocument
from omnium.games import workflow
from omnium.games.models import Fixture
from tests import child_processes
from tests.conftest import ALL_QUEUES
from tests.delivery.fixtures import redis_destination_settings, webhook_settings

FAST = {"OMNIUM_SWEEP_INTERVAL_S": 0.5, "OMNIUM_DELIVERY_LEASE_MARGIN_S": 5}
# Beats this often in the worker of the heartbeat test: it waits for three to be missed.
HEARTBEAT_S = 0.5


def calendar_seq(games) -> int:
    return FeedDocument.objects.get(doc_key=f"{games.code}/calendar").seq


def score(games, value):
    fixture = Fixture.objects.filter(games=games).order_by("starts_at", "id").first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: value})


@pytest.mark.worker
def test_pausing_stops_sends_within_a_second_and_resuming_sends_only_the_newest(small_games, subscribe, clean_redis):
    started = [child_processes.start_worker(ALL_QUEUES, "builds", **FAST), child_processes.start_delivery_worker("delivery", **FAST)]
    try:
        destination = subscribe(small_games, redis_destination_settings())
        wait_until(lambda: DeliveryState.objects.filter(destination=destination, sent_seq=calendar_seq(small_games)).exists())
        control.pause(destination.pk, "client asked for a maintenance window")
        paused_at = time.monotonic()
        before = DeliveryAttempt.objects.filter(destination=destination).count()

        for value in (1, 2):  # two new versions, each built before the next change
            previous = calendar_seq(small_games)
            score(small_games, value)
            wait_until(lambda previous=previous: calendar_seq(small_games) > previous, 10,
                       message=f"the version with score {value} built")
        newest = calendar_seq(small_games)
        time.sleep(max(0.0, 1.5 - (time.monotonic() - paused_at)))  # watch a paused sender for 1.5 s at least
        assert DeliveryAttempt.objects.filter(destination=destination).count() == before, "sent while paused"

        control.resume(destination.pk)
        wait_until(lambda: DeliveryState.objects.filter(destination=destination, sent_seq=newest).exists(), 10)
        sent_after = list(DeliveryAttempt.objects.filter(destination=destination).order_by("pk")
                          .values_list("seq", flat=True))[before:]
        assert sent_after == [newest]
    finally:
        for process in reversed(started):
            process.stop()


@pytest.mark.worker
def test_health_shows_failing_and_the_heartbeat_vanishes_when_the_worker_dies(small_games, subscribe, receiver,
                                                                              clean_redis):
    receiver.replies.extend([(503, {})] * 50)
    delivery = child_processes.start_delivery_worker("delivery-health", OMNIUM_DELIVERY_SLOW_RETRY_S=0.5,
                                                     OMNIUM_HEARTBEAT_INTERVAL_S=HEARTBEAT_S, **FAST)
    beat = child_processes.start_beat("beat-health", **FAST)
    try:
        destination = subscribe(small_games, webhook_settings(receiver.url), fast_retries=0)
        failing = wait_until(lambda: health.read(destination.pk).get("status") == health.Status.FAILING and
                             health.read(destination.pk), 15, message="status failing")
        assert int(failing["errors"]) >= 1
        wait_until(lambda: health.read(destination.pk)["stalled"] is False, HEARTBEAT_S + 2,
                   message="the worker's heartbeat covers the new destination")
        delivery.kill()
        wait_until(lambda: health.read(destination.pk)["stalled"], 3 * HEARTBEAT_S + 5,
                   message="heartbeat gone")
    finally:
        beat.stop()
        delivery.stop()


def test_health_status_is_written_on_every_change_and_is_true_after_resume(small_games, subscribe, receiver,
                                                                            clean_redis):
    destination = subscribe(small_games, webhook_settings(receiver.url), fast_retries=1)
    receiver.replies.extend([(503, {}), (503, {})])

    def status_after(action) -> tuple[str, int]:
        action()
        published = health.read(destination.pk)
        return published.get("status"), int(published.get("errors", -1))

    def send_again():
        control.retry_now(destination.pk)  # no waiting out the back-off
        DeliveryState.objects.filter(destination=destination).update(force_resend=True)
        sender.drain(destination.pk)

    assert status_after(lambda: sender.drain(destination.pk)) == (health.Status.BACKING_OFF, 1)
    assert status_after(send_again) == (health.Status.FAILING, 2)
    assert status_after(lambda: control.pause(destination.pk, "maintenance")) == (health.Status.PAUSED, 0)
    assert status_after(lambda: control.resume(destination.pk)) == (health.Status.FAILING, 2), "resume shows the real state"
    assert status_after(send_again) == (health.Status.RUNNING, 0), "the recovery, published at once"
    assert health.read_events()[0]["kind"] == "recovered"
    assert status_after(send_again) == (health.Status.RUNNING, 0)
    assert status_after(lambda: control.pause(destination.pk, "maintenance")) == (health.Status.PAUSED, 0)
    assert status_after(lambda: control.resume(destination.pk)) == (health.Status.RUNNING, 0)


def test_a_healthy_destination_shows_running_from_the_heartbeat_after_its_first_send(small_games, subscribe,
                                                                                      receiver, clean_redis):
    destination = subscribe(small_games, webhook_settings(receiver.url))

    sender.drain(destination.pk)
    health.beat(heartbeats.WorkerHeartbeat("this-test"), frozenset({destination.pk}))

    published = health.read(destination.pk)
    assert published.get("status") == health.Status.RUNNING and published["stalled"] is False
    assert float(published["last_success"]) > time.time() - 60


def test_the_client_status_screen_shows_what_each_file_last_received(small_games, subscribe, receiver, admin_client):
    destination = subscribe(small_games, webhook_settings(receiver.url), feed_types=("calendar", "medals"))
    sender.drain(destination.pk)
    state = DeliveryState.objects.get(destination=destination, doc_key__endswith="calendar")

    page = admin_client.get(f"/admin/delivery/status/client/{destination.client_id}/").content.decode()

    assert f"{small_games.code}/calendar" in page and f"{small_games.code}/medals" in page
    assert str(state.sent_seq) in page and state.sent_at.strftime("%Y-%m-%d %H:%M:%S") in page
    assert state.receipt[:20] in page and "up to date" in page and "<svg" in page
    assert bytes(state.sent_bytes_sha256).hex()[:12] in page, "the digest a client can check its file against"


def test_the_overview_lists_switched_off_clients_and_failing_destinations_first(small_games, subscribe, receiver,
                                                                                admin_client):
    healthy = subscribe(small_games, redis_destination_settings(), client="Alpha")
    broken = subscribe(small_games, webhook_settings(receiver.url), client="Zulu", fast_retries=0)
    receiver.replies.append((503, {}))
    sender.drain(broken.pk)
    sender.drain(healthy.pk)
    Client.objects.create(name="Bravo").switch_off("unpaid invoice")

    page = admin_client.get("/admin/delivery/status/").content.decode()

    assert "Switched-off clients" in page and "unpaid invoice" in page
    assert page.index(broken.name) < page.index(healthy.name), "the failing destination comes first"


def test_switching_off_a_client_without_a_reason_is_refused(transactional_db):
    client = Client.objects.create(name="NoReason")
    with pytest.raises(ValidationError, match="Say why"):
        client.switch_off("   ")
    assert Client.objects.get(pk=client.pk).active


def test_fast_retries_outside_its_bounds_is_refused(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    destination.fast_retries = 11
    with pytest.raises(ValidationError, match="less than or equal to 10"):
        destination.full_clean()


def test_an_invalid_slack_url_stops_the_process_at_start_with_a_clear_message():
    env = {**os.environ, "OMNIUM_ALERT_SLACK_URL": "hooks.slack.com/services/T000/B000/XXX"}
    run = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env, capture_output=True,
                         text=True, cwd=child_processes.processes.ROOT)
    assert run.returncode != 0
    assert "OMNIUM_ALERT_SLACK_URL must be an http(s) URL" in run.stderr


def test_switching_off_in_the_admin_records_who_when_and_why(admin_client, admin_user):
    client = Client.objects.create(name="Switchable")
    form = {"name": "Switchable", "switched_off_reason": "contract ended", "transform": client.transform,
            "destinations-TOTAL_FORMS": 0, "destinations-INITIAL_FORMS": 0,
            "api_keys-TOTAL_FORMS": 0, "api_keys-INITIAL_FORMS": 0}  # the page's two inlines, as a browser sends them

    admin_client.post(f"/admin/clients/client/{client.pk}/change/", form)  # "active" left unticked

    client.refresh_from_db()
    assert (client.active, client.switched_off_reason, client.switched_off_by) == (False, "contract ended", admin_user)
    assert client.switched_off_at is not None

    admin_client.post(f"/admin/clients/client/{client.pk}/change/", {**form, "active": "on"})
    client.refresh_from_db()
    assert (client.active, client.switched_off_reason, client.switched_off_by) == (True, "", None)


def test_the_overview_shows_the_recent_events_newest_first_with_their_destination(small_games, subscribe, receiver,
                                                                                  admin_client, clean_redis):
    """The health events (recoveries, alerts, refusals, operators' controls) were written and
    only tests read them; the overview now lists the newest, in words."""
    destination = subscribe(small_games, webhook_settings(receiver.url))
    control.pause(destination.pk, "client's maintenance")
    control.resume(destination.pk)

    page = admin_client.get("/admin/delivery/status/").content.decode()

    events = page[page.index('id="recent-events"'):]
    assert events.index("resumed") < events.index("paused"), "newest first"
    assert f"{destination.client.name}</a>: {destination.name}" in events
    assert "client&#x27;s maintenance" in events
