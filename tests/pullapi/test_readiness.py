"""/healthz and /readyz: what a load balancer asks, without a key."""

import logging

import redis

from omnium.pullapi import readiness
from omnium.pullapi.catalogue import EMPTY, holder
from omnium.pullapi.log_scrubbing import QuietProbes


def test_healthz_answers_without_a_key_or_a_session(client):
    reply = client.get("/healthz")
    assert reply.status_code == 200 and reply.json() == {"status": "ok"}


def test_readyz_is_ready_with_a_loaded_catalogue_and_says_what_it_checked(games, client):
    holder.reload()
    reply = client.get("/readyz")
    assert reply.status_code == 200
    assert reply.json() == {"status": "ready", "checks": {"catalogue": True, "redis": True, "postgresql": True,
                                                          "files_in_memory": reply.json()["checks"]["files_in_memory"]}}


def test_readyz_is_not_ready_before_the_catalogue_is_loaded(games, client, monkeypatch):
    monkeypatch.setattr(holder, "_snapshot", EMPTY)  # a process just started, its first load not done
    reply = client.get("/readyz")
    assert reply.status_code == 503
    assert reply.json()["status"] == "not ready" and reply.json()["checks"]["catalogue"] is False


def test_readyz_stays_ready_while_the_pull_cache_redis_is_down_because_postgresql_serves(games, client,
                                                                                        monkeypatch):
    holder.reload()
    unreachable = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    monkeypatch.setattr(readiness, "pull_redis", lambda: unreachable)
    reply = client.get("/readyz")
    assert reply.status_code == 200 and reply.json()["checks"]["redis"] is False


def test_a_probe_answered_503_leaves_no_log_line_and_other_requests_still_do(rf):
    def record_for(path):
        record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Service Unavailable: %s",
                                   (path,), None)
        record.request = rf.get(path)
        return record

    assert not QuietProbes().filter(record_for("/readyz"))
    assert QuietProbes().filter(record_for("/v1/feeds/ag1/medals"))
