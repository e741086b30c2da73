"""Hints to a broker that is down or does not answer: never an exception, never a wait for the
caller, and the outage told once when it begins and once when it ends."""

import logging
import time

import amqp
import kombu
import pytest
from django.conf import settings

from devtools.loopback.hosts import SilentHost
from devtools.processes import free_port
from omnium.messaging import hints, outage

OUTAGE_LOGGER = "omnium.messaging.outage"


def publish_to(url: str):
    """A real publish to the broker at `url` (kombu, as every hint is sent)."""
    def publish():
        with kombu.Connection(url) as connection:
            connection.Producer().publish(b"hint", exchange="", routing_key="omnium.test.none")
    return publish


def connect_to(port: int, connect_timeout: float = 1.0):
    """One AMQP connection attempt to 127.0.0.1:`port` (py-amqp, without kombu's retries)."""
    def connect():
        amqp.Connection(f"127.0.0.1:{port}", connect_timeout=connect_timeout).connect()
    return connect


@pytest.fixture
def no_outage():
    """Each test starts with the broker reachable, as this process last saw it."""
    hints.send("a test hint", lambda: None)
    yield
    hints.send("a test hint", lambda: None)


def outage_records(caplog):
    return [record.getMessage() for record in caplog.records if record.name == OUTAGE_LOGGER]


@pytest.mark.broker
def test_an_outage_is_told_once_as_it_begins_and_once_as_it_ends(no_outage, caplog):
    closed = free_port()
    caplog.set_level(logging.WARNING, logger=OUTAGE_LOGGER)

    sent = [hints.send(f"hint {n}", connect_to(closed)) for n in range(5)]
    assert sent == [False] * 5, "no hint went, and none raised"
    assert outage.in_outage()
    told = outage_records(caplog)
    assert len(told) == 1 and "The broker cannot be reached (" in told[0] and "Connection refused" in told[0], told

    assert hints.send("hint after the return", publish_to(settings.CELERY_BROKER_URL))
    told = outage_records(caplog)
    assert len(told) == 2 and told[1].startswith("The broker is reachable again after"), told
    assert "5 hints went unsent" in told[1]
    assert not outage.in_outage()


def test_a_hint_that_reports_its_own_failure_is_not_taken_for_a_success(no_outage, caplog):
    caplog.set_level(logging.WARNING, logger=OUTAGE_LOGGER)

    def kicks_that_swallow_their_failure():
        outage.failed("kicks", ConnectionRefusedError(111, "Connection refused"))

    assert not hints.send("kicks", kicks_that_swallow_their_failure)
    assert outage.in_outage(), "still down: the outer send must not say the broker is back"
    assert len(outage_records(caplog)) == 1


def test_a_hint_sent_soon_never_holds_the_caller_while_the_broker_does_not_answer(no_outage):
    silent = SilentHost()
    try:
        began = time.monotonic()
        for _ in range(3):
            hints.send_soon("a hint to a silent broker", connect_to(silent.port))
        handed_over_s = time.monotonic() - began
        assert handed_over_s < 0.2, f"the caller waited {handed_over_s:.2f} s"
        assert hints.wait_until_sent(timeout=30)
        assert outage.in_outage(), "the hint thread tried them, and each timed out"
    finally:
        silent.stop()
