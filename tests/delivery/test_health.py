"""What a send publishes for the status screens: its destination's status and a "sent" event."""

import json

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
