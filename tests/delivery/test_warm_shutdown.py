"""A delivery worker's warm shutdown (issue 40): SIGTERM mid-send lets the send in flight finish
(or cuts it at the stop deadline, saying so), releases the destination's lease and leaves a kick
for another worker, which carries on at once; nothing is lost.

No beat runs here: the sweeper would make up for a lost kick or an unreleased lease a while
later, and hide exactly what these tests look for."""

import time

import pytest

from devtools.loopback.hosts import HoldingReceiver
from devtools.waiting import wait_until
from omnium.delivery.models import DeliveryAttempt, SenderState
from tests import child_processes
from tests.delivery.fixtures import webhook_settings

pytestmark = pytest.mark.worker

FEEDS = ("calendar", "country")


@pytest.fixture
def holding_receiver():
    server = HoldingReceiver(hold_s=3.0)
    yield server
    server.release.set()
    server.stop()


def _lease_of(destination):
    return SenderState.objects.filter(pk=destination.pk).values_list("lease_token", flat=True).first()


def _stop(worker) -> float:
    started = time.monotonic()
    worker.stop(timeout=30)
    assert worker.popen.returncode is not None, "the worker did not stop"
    return time.monotonic() - started


def test_sigterm_mid_send_finishes_that_send_and_hands_the_rest_to_another_worker(
        small_games, subscribe, holding_receiver, transactional_db):
    first = child_processes.start_delivery_worker("delivery-stopping")
    destination = subscribe(small_games, webhook_settings(holding_receiver.url("warm"), send_timeout=20),
                            feed_types=FEEDS)
    wait_until(lambda: holding_receiver.received, 15, message="a send in flight")

    took = _stop(first)

    assert took < holding_receiver.hold_s + 5, f"stopping took {took:.1f} s"
    landed = DeliveryAttempt.objects.filter(destination=destination, ok=True)
    assert landed.count() == 1 and len(holding_receiver.received) == 1, "the send in flight ended, no other began"
    assert not DeliveryAttempt.objects.filter(destination=destination, ok=False).exists()
    assert _lease_of(destination) is None

    holding_receiver.hold_s = 0.0
    second = child_processes.start_delivery_worker("delivery-taking-over")
    try:
        wait_until(lambda: DeliveryAttempt.objects.filter(destination=destination, ok=True).count() > 1, 20,
                   message="the next worker carried on without a sweep")
    finally:
        second.stop()


def test_a_send_that_outlasts_the_stop_deadline_is_cut_and_recorded_naming_its_destination(
        small_games, subscribe, holding_receiver, transactional_db):
    holding_receiver.hold_s = 25.0
    worker = child_processes.start_delivery_worker("delivery-overrun", OMNIUM_DELIVERY_STOP_DEADLINE_S=1)
    destination = subscribe(small_games, webhook_settings(holding_receiver.url("overrun"), send_timeout=30))
    wait_until(lambda: holding_receiver.received, 15, message="a send in flight")

    took = _stop(worker)

    assert took < 8, f"stopping took {took:.1f} s"
    attempt = DeliveryAttempt.objects.get(destination=destination)
    assert not attempt.ok and "cut: the worker was stopping" in attempt.error
    assert _lease_of(destination) is None
    log = worker.log_path.read_text()
    assert f"the send to destination {destination.pk} did not finish within the 1 s drain deadline" in log
