"""Health of every destination and delivery worker, published in Redis for ops to watch.

Keys (the pattern of seed 002):
  omnium:dest:<id>            hash: status (running · paused · backing_off · failing),
                              errors (consecutive), last_success, backoff_s, updated
  omnium:dest:<id>:heartbeat  set by the worker that serves the destination every
                              OMNIUM_HEARTBEAT_INTERVAL_S, TTL 3x that, so its absence
                              means nobody is serving it (stalled)
  omnium:worker:<hostname>    the worker's own heartbeat, same TTL
  omnium:events               the last 200 events, newest first (JSON lines)
Redis holds no truth here: everything can be recomputed from PostgreSQL; a Redis outage only
blinds the screens for a while and never stops a send.
"""

import json
import logging
import time
from enum import StrEnum

from redis.exceptions import RedisError

from omnium.conf import omnium_setting
from omnium.redis_client import redis_client

log = logging.getLogger(__name__)



def heartbeat_interval_s() -> float:
    return omnium_setting("HEARTBEAT_INTERVAL_S")


def heartbeat_ttl_s() -> float:
    """A heartbeat outlives two missed beats: its absence means the worker is gone."""
    return 3 * heartbeat_interval_s()

EVENT_LOG = "omnium:events"
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


def destination_key(destination_id: int) -> str:
    return f"omnium:dest:{destination_id}"


def publish_status(destination_id: int, status: Status, errors: int = 0, last_success: float | None = None,
                   backoff_s: float = 0.0) -> None:
    _quietly(lambda r: _status_into(r, destination_id, status, errors, last_success, backoff_s))


def _status_into(r, destination_id: int, status: Status, errors: int = 0, last_success: float | None = None,
                 backoff_s: float = 0.0) -> None:
    fields = {"status": status, "errors": errors, "backoff_s": round(backoff_s, 1), "updated": time.time()}
    if last_success is not None:
        fields["last_success"] = last_success
    r.hset(destination_key(destination_id), mapping=fields)


def record_event(kind: str, destination_id: int | None = None, **details) -> None:
    """Add an event (sent, failed, paused, alert_opened…) to the capped log."""

    def push(r):
        pipe = r.pipeline()
        _event_into(pipe, kind, destination_id, **details)
        pipe.execute()

    _quietly(push)


def _event_into(pipe, kind: str, destination_id: int | None, **details) -> None:
    event = json.dumps({"at": time.time(), "kind": kind, "destination": destination_id, **details}, default=str)
    pipe.lpush(EVENT_LOG, event)
    pipe.ltrim(EVENT_LOG, 0, EVENT_LOG_SIZE - 1)


def publish_sent(destination_id: int, status: Status, forget: tuple[str, ...] = (), **details) -> None:
    """A send's status and its "sent" event, in one round trip (every send publishes both);
    the keys in `forget` are deleted in the same round trip."""

    def push(r):
        pipe = r.pipeline(transaction=False)  # for people to read: no MULTI/EXEC needed
        _status_into(pipe, destination_id, status, last_success=time.time())
        _event_into(pipe, "sent", destination_id, **details)
        if forget:
            pipe.delete(*forget)
        pipe.execute()

    _quietly(push)


def read_events(limit: int = EVENT_LOG_SIZE) -> list[dict]:
    raw = _quietly(lambda r: r.lrange(EVENT_LOG, 0, limit - 1)) or []
    return [json.loads(item) for item in raw]


def beat(hostname: str, destination_ids) -> None:
    """One heartbeat of a delivery worker, for itself and every destination it serves."""
    now = time.time()

    def write(r):
        pipe = r.pipeline()
        pipe.set(f"omnium:worker:{hostname}", now, px=int(heartbeat_ttl_s() * 1000))
        for destination_id in destination_ids:
            pipe.set(f"{destination_key(destination_id)}:heartbeat", now, px=int(heartbeat_ttl_s() * 1000))
        pipe.execute()

    _quietly(write)


def read(destination_id: int) -> dict:
    """The published health of a destination, with `stalled` when no worker serves it."""
    def fetch(r):
        pipe = r.pipeline()
        pipe.hgetall(destination_key(destination_id))
        pipe.get(f"{destination_key(destination_id)}:heartbeat")
        return pipe.execute()

    found = _quietly(fetch)
    if found is None:
        return {"status": "unknown", "stalled": None}
    fields, heartbeat = found
    health = {k.decode(): v.decode() for k, v in fields.items()}
    health["stalled"] = heartbeat is None
    health["heartbeat"] = float(heartbeat) if heartbeat else None
    return health


def read_stalled(destination_ids: list[int]) -> dict[int, bool | None]:
    """Whether each destination has no worker serving it, in one round trip (a page of the
    status overview); None for all when Redis cannot tell."""
    keys = [f"{destination_key(d)}:heartbeat" for d in destination_ids]
    beats = _quietly(lambda r: r.mget(keys)) if keys else []
    if beats is None:
        return dict.fromkeys(destination_ids)
    return {d: beat is None for d, beat in zip(destination_ids, beats, strict=True)}


def _quietly(action):
    try:
        return action(redis_client())
    except RedisError:
        log.warning("health not published: Redis unavailable", exc_info=True)
        return None
