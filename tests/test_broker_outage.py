"""Hints to a broker that is down or does not answer: never an exception, never a wait for the
caller, and the outage told once when it begins and once when it ends."""

import logging
import re
import time
from urllib.parse import urlsplit

import amqp
import kombu
import pytest
from django.conf import settings

from devtools import tcp_forwarder
from devtools.loopback.hosts import SilentHost
from devtools.processes import ManagedProcess, free_port
from devtools.waiting import wait_until
from omnium.messaging import hints, outage
from tests import child_processes

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


FORWARDER_ADDRESS = "127.0.0.77"  # a loopback address of its own: the broker listens on 127.0.0.1 only


def start_forwarder(broker_port: int) -> ManagedProcess:
    forwarder = ManagedProcess(tcp_forwarder.command(FORWARDER_ADDRESS, "127.0.0.1", [broker_port]),
                               "outage-forwarder", child_processes.child_environment(), child_processes.LOG_DIR)
    forwarder.wait_for_output(tcp_forwarder.READY)
    return forwarder


@pytest.mark.worker
def test_a_worker_tells_a_lost_broker_once_not_at_every_try_and_tells_its_return():
    """Celery's consumer logs "Cannot connect … Trying again" for each try of a lost
    connection: every second of an outage (omnium.messaging.reconnecting), thousands of lines
    in an hour. The worker tells the outage once, with the address it tried, and its end."""
    broker = urlsplit(settings.CELERY_BROKER_URL)
    through_forwarder = broker._replace(netloc=broker.netloc.replace(broker.hostname, FORWARDER_ADDRESS)).geturl()
    forwarder = start_forwarder(broker.port)
    worker = child_processes.start_worker(["omnium.test.outage-told"], "outage-told", concurrency=1,
                                          CELERY_BROKER_URL=through_forwarder)
    try:
        forwarder.stop()  # the worker's connection is cut, and every try refused
        wait_until(lambda: "The broker cannot be reached" in worker.output_since_start(), 15,
                   message="the outage told")
        time.sleep(4)  # four tries at least
        forwarder = start_forwarder(broker.port)
        wait_until(lambda: "The broker is reachable again" in worker.output_since_start(), 30,
                   message="the return told")
        told = worker.output_since_start()
        assert "Cannot connect" not in told
        assert told.count("The broker cannot be reached") == 1
        assert re.search(rf"the worker connecting to amqp://\S*@{re.escape(FORWARDER_ADDRESS)}:{broker.port}/", told)
    finally:
        worker.stop()
        forwarder.stop()
