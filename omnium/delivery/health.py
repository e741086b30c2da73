"""Health of every destination and delivery worker, published in Redis for ops to watch.

Keys (the pattern of seed 002):
  omnium:dest:<id>            hash: status (running · paused · backing_off · failing),
                              errors (consecutive), last_success, backoff_s, updated
  omnium:events               the last 200 events, newest first (JSON lines)
and the delivery workers' heartbeats, which say whether a live worker serves a destination
(see delivery.heartbeats): `stalled` when none does.

A status and its event are written when the status changes (a failure, a recovery, a pause,
a resume), by whoever changes it; a send that changes nothing writes nothing at once: its time
goes out as `last_success` with its worker's next heartbeat. The status screens read
PostgreSQL, not these keys.
Redis holds no truth here: everything can be recomputed from PostgreSQL; a Redis outage only
blinds the screens for a while and never stops a send.
"""

import json
import logging
import threading
import time
from enum import StrEnum

from redis.exceptions import RedisError

from omnium import redis_keys
from omnium.delivery import heartbeats
from omnium.redis_client import redis_client

log = logging.getLogger(__name__)

EVENT_LOG_SIZE = 200

class Status(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    BACKING_OFF = "backing_off"
    FAILING = "failing"


def status_of(paused: bool, failures: int, fast_retries: int) -> Status:
    if paused:
        return Status.PAUSED
    if failures > fast_retries:
        return Status.FAILING
    return Status.BACKING_OFF if failures else Status.RUNNING


def publish_status(destination_id: int, status: Status, errors: int = 0, last_success: float | None = None,
                   backoff_s: float = 0.0) -> None:
    _quietly(lambda r: _status_into(r, destination_id, status, errors, last_success, backoff_s))


def _status_into(r, destination_id: int, status: Status, errors: int = 0, last_success: float | None = None,
                 backoff_s: float = 0.0) -> None:
    fields = {"status": status, "errors": errors, "backoff_s": round(backoff_s, 1), "updated": time.time()}
    if last_success is not None:
        fields["last_success"] = last_success
    r.hset(redis_keys.destination_health(destination_id), mapping=fields)


def record_event(kind: str, destination_id: int | None = None, **details) -> None:
    """Add an event (sent, failed, paused, alert_opened…) to the capped log."""

    def push(r):
        pipe = r.pipeline()
        _event_into(pipe, kind, destination_id, **details)
        pipe.execute()

    _quietly(push)


def _event_into(pipe, kind: str, destination_id: int | None, **details) -> None:
    pipe.lpush(redis_keys.EVENT_LOG, _event(kind, destination_id, time.time(), **details))
    pipe.ltrim(redis_keys.EVENT_LOG, 0, EVENT_LOG_SIZE - 1)


def _event(kind: str, destination_id: int | None, at: float, **details) -> str:
    return json.dumps({"at": at, "kind": kind, "destination": destination_id, **details}, default=str)


class SuccessesSinceBeat:
    """When each destination last sent, since this process's last heartbeat: published with
    the next beat, so that a send costs no Redis round trip of its own (a change of status
    is published at once, by whoever makes it: backoff, control, the sender's recovery)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._last: dict[int, float] = {}

    def note(self, destination_id: int, at: float) -> None:
        with self._lock:
            self._last[destination_id] = at

    def take(self) -> dict[int, float]:
        with self._lock:
            taken, self._last = self._last, {}
        return taken


_successes = SuccessesSinceBeat()


def sent(destination_id: int) -> None:
    """A send of this destination landed (its proof is recorded): its last success is
    published with this process's next heartbeat."""
    _successes.note(destination_id, time.time())


def _successes_into(r, successes: dict[int, float]) -> None:
    """Each destination's last success; `running` where no status was ever published (a
    destination that has only ever succeeded must not look unknown). A status published
    meanwhile (a failure, a pause) stays."""
    pipe = r.pipeline(transaction=False)
    for destination_id, at in successes.items():
        pipe.hset(redis_keys.destination_health(destination_id), "last_success", at)
        pipe.hsetnx(redis_keys.destination_health(destination_id), "status", Status.RUNNING)
    pipe.execute()


def read_events(limit: int = EVENT_LOG_SIZE) -> list[dict]:
    raw = _quietly(lambda r: r.lrange(redis_keys.EVENT_LOG, 0, limit - 1)) or []
    return [json.loads(item) for item in raw]


def beat(heartbeat: heartbeats.WorkerHeartbeat, destination_ids: frozenset[int]) -> None:
    """One heartbeat of a delivery worker, naming the destinations it serves, with the last
    successes of this process's sends since the previous beat (of the destinations it still
    serves: a deleted destination's keys, gone with it, must not come back)."""
    successes = {d: at for d, at in _successes.take().items() if d in destination_ids}

    def write(r):
        heartbeat.beat(r, time.time(), destination_ids)
        if successes:
            _successes_into(r, successes)

    _quietly(write)


def read(destination_id: int) -> dict:
    """The published health of a destination, with `stalled` when no live worker serves it."""
    def fetch(r):
        return r.hgetall(redis_keys.destination_health(destination_id)), heartbeats.served(r, [destination_id])[0]

    found = _quietly(fetch)
    if found is None:
        return {"status": "unknown", "stalled": None}
    fields, served = found
    health = {k.decode(): v.decode() for k, v in fields.items()}
    health["stalled"] = not served
    return health


def read_stalled(destination_ids: list[int]) -> dict[int, bool | None]:
    """Whether each destination has no live worker serving it (a page of the status overview);
    None for all when Redis cannot tell."""
    served = _quietly(lambda r: heartbeats.served(r, destination_ids)) if destination_ids else []
    if served is None:
        return dict.fromkeys(destination_ids)
    return {d: not s for d, s in zip(destination_ids, served, strict=True)}


def _quietly(action):
    """`action` on Redis; None if Redis is unavailable."""
    try:
        return action(redis_client())
    except RedisError:
        log.warning("health not published: Redis unavailable", exc_info=True)
        return None
