"""What the status screens' Redis keys hold: a status and an event when the status changes,
and the last success of each send with its worker's next heartbeat."""

import json
import time

from omnium import redis_keys
from omnium.delivery import health, heartbeats


def _status_in_redis(r, destination_id: int) -> dict:
    return {k.decode(): v.decode() for k, v in r.hgetall(redis_keys.destination_health(destination_id)).items()}


def _beat(worker: str = "health-test-worker", serving: frozenset[int] = frozenset(range(100))) -> None:
    health.beat(heartbeats.WorkerHeartbeat(worker), serving)


def test_a_change_of_status_is_published_at_once_with_its_event_in_a_capped_log(clean_redis):
    r = clean_redis
    for n in range(health.EVENT_LOG_SIZE + 5):
        health.record_event("failed", 7, n=n)

    health.publish_status(7, health.Status.BACKING_OFF, errors=3, backoff_s=12.5)
    health.record_event("paused", 7, reason="maintenance")

    status = _status_in_redis(r, 7)
    assert (status["status"], status["errors"], float(status["backoff_s"])) == ("backing_off", "3", 12.5)
    events = health.read_events()
    assert len(events) == health.EVENT_LOG_SIZE, "the log stays capped"
    assert {k: events[0][k] for k in ("kind", "destination", "reason")} == {
        "kind": "paused", "destination": 7, "reason": "maintenance"}
    assert json.loads(r.lindex(redis_keys.EVENT_LOG, 1))["n"] == health.EVENT_LOG_SIZE + 4


def test_a_send_writes_nothing_at_once_and_its_success_goes_out_with_the_next_heartbeat(clean_redis):
    r = clean_redis
    before = time.time()

    health.sent(21)
    health.sent(22)
    health.sent(21)

    assert _status_in_redis(r, 21) == {} and r.llen(redis_keys.EVENT_LOG) == 0, "no round trip of its own"
    _beat()
    for destination_id in (21, 22):
        published = _status_in_redis(r, destination_id)
        assert published["status"] == "running", "a destination that only ever succeeded must not look unknown"
        assert time.time() >= float(published["last_success"]) >= before
    assert r.llen(redis_keys.EVENT_LOG) == 0, "a send that changes nothing is no event"

    r.delete(redis_keys.destination_health(21))
    _beat()
    assert _status_in_redis(r, 21) == {}, "each success is published once"


def test_a_success_of_a_destination_the_worker_no_longer_serves_is_not_published(clean_redis):
    """Deleted meanwhile: its keys went with it (delivery.operations.key_cleanup) and must not come back."""
    health.sent(24)
    _beat(serving=frozenset({25}))
    assert _status_in_redis(clean_redis, 24) == {}


def test_a_status_published_between_a_send_and_the_heartbeat_stays(clean_redis):
    """The admin paused the destination (another process) after the send, before the beat:
    the screen must say paused, and still show the send's success."""
    r = clean_redis
    health.sent(23)
    sent_at = time.time()
    health.publish_status(23, health.Status.PAUSED)  # as control.pause in an API process

    _beat()

    status = _status_in_redis(r, 23)
    assert status["status"] == "paused"
    assert sent_at >= float(status["last_success"]) > sent_at - 5


def test_the_heartbeat_names_the_destinations_a_worker_serves(clean_redis):
    _beat("serving-worker", frozenset({31, 32}))

    assert health.read(31)["stalled"] is False
    assert health.read_stalled([31, 33]) == {31: False, 33: True}


def test_with_redis_unreachable_health_writes_and_reads_give_up_quietly(monkeypatch):
    from redis import Redis

    unreachable = Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    monkeypatch.setattr(health, "redis_client", lambda: unreachable)

    health.publish_status(41, health.Status.FAILING, errors=2)
    health.sent(41)
    _beat()

    assert health.read(41) == {"status": "unknown", "stalled": None}
    assert health.read_events() == []
