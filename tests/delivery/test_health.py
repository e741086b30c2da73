"""What a send publishes for the status screens: its destination's status and a "sent" event."""

import json
import time

import pytest

from devtools.waiting import wait_until
from omnium.delivery import health


def test_a_send_publishes_its_status_and_event_and_forgets_the_keys_given(clean_redis):
    r = clean_redis
    r.set("omnium:test-mark", 1)
    health.publish_status(7, health.Status.BACKING_OFF, errors=3, backoff_s=12.5)
    for n in range(health.EVENT_LOG_SIZE):
        health.record_event("failed", 7, n=n)

    health.publish_sent(7, health.Status.RUNNING, forget=("omnium:test-mark",), doc_key="g/medals", seq=42)

    status = health.read(7)
    assert (status["status"], status["errors"], float(status["backoff_s"])) == ("running", "0", 0.0)
    assert float(status["last_success"]) == float(status["updated"]) > 0
    events = health.read_events()
    assert len(events) == health.EVENT_LOG_SIZE, "the log stays capped"
    assert {k: events[0][k] for k in ("kind", "destination", "doc_key", "seq")} == {
        "kind": "sent", "destination": 7, "doc_key": "g/medals", "seq": 42}
    assert json.loads(r.lindex(health.EVENT_LOG, 1))["n"] == health.EVENT_LOG_SIZE - 1
    assert not r.exists("omnium:test-mark")


def test_a_send_without_keys_to_forget_publishes_the_same(clean_redis):
    health.publish_sent(8, health.Status.PAUSED, doc_key="g/calendar", seq=1)

    assert health.read(8)["status"] == "paused"
    assert health.read_events()[0]["kind"] == "sent"


@pytest.fixture
def batching(monkeypatch):
    """This test's sends published in batches, as in a delivery worker."""
    batches = health._SentBatches()
    monkeypatch.setattr(health, "_batches", batches)
    batches.start()
    yield batches
    batches.stop()


def _status_in_redis(r, destination_id: int) -> dict:
    """Read straight from Redis (health.read would publish the waiting sends first)."""
    return {k.decode(): v.decode() for k, v in r.hgetall(health.destination_key(destination_id)).items()}


def test_a_delivery_worker_publishes_its_sends_in_batches_in_the_order_sent(clean_redis, batching):
    r = clean_redis
    r.set("omnium:test-mark", 1)
    health.publish_sent(21, health.Status.RUNNING, doc_key="g/medals", seq=1)
    health.publish_sent(22, health.Status.RUNNING, forget=("omnium:test-mark",), doc_key="g/medals", seq=1)
    health.publish_sent(21, health.Status.RUNNING, doc_key="g/medals", seq=2)
    assert _status_in_redis(r, 21) == {} and r.exists("omnium:test-mark"), "they wait for the batch"

    wait_until(lambda: _status_in_redis(r, 21), 5, 0.01, "the batch published")

    assert [(e["destination"], e["seq"]) for e in health.read_events()] == [(21, 2), (22, 1), (21, 1)]
    assert _status_in_redis(r, 22)["status"] == "running"
    assert not r.exists("omnium:test-mark")


def test_a_status_written_while_a_send_waited_in_its_batch_stays(clean_redis, batching):
    """The admin paused the destination (another process) after the send, before its batch
    went: the screen must say paused, and still show the send's success."""
    r = clean_redis
    health.publish_sent(23, health.Status.RUNNING, doc_key="g/medals", seq=1)
    sent_at = time.time()
    health._status_into(r, 23, health.Status.PAUSED)  # as control.pause in an API process

    health.publish_waiting_sent()

    status = _status_in_redis(r, 23)
    assert status["status"] == "paused"
    assert sent_at >= float(status["last_success"]) > sent_at - 5


def test_a_later_health_write_of_the_same_worker_lands_after_the_waiting_sends(clean_redis, batching):
    health.publish_sent(24, health.Status.RUNNING, doc_key="g/medals", seq=1)
    health.publish_status(24, health.Status.BACKING_OFF, errors=1, backoff_s=2.0)
    health.record_event("failed", 24, doc_key="g/medals", seq=2)

    assert [e["kind"] for e in health.read_events()] == ["failed", "sent"]
    assert _status_in_redis(clean_redis, 24)["status"] == "backing_off"


def test_stopping_publishes_what_waits_and_each_send_at_once_after(clean_redis, batching):
    health.publish_sent(25, health.Status.RUNNING, doc_key="g/medals", seq=1)
    batching.stop()
    assert _status_in_redis(clean_redis, 25)["status"] == "running"

    health.publish_sent(26, health.Status.RUNNING, doc_key="g/medals", seq=1)
    assert _status_in_redis(clean_redis, 26)["status"] == "running"
