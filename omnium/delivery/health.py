"""Health of every destination and delivery worker, published in Redis for ops to watch.

Keys (the pattern of seed 002):
  omnium:dest:<id>            hash: status (running · paused · backing_off · failing),
                              errors (consecutive), last_success, backoff_s, updated
  omnium:events               the last 200 events, newest first (JSON lines)
and the delivery workers' heartbeats, which say whether a live worker serves a destination
(see delivery.heartbeats): `stalled` when none does.
Redis holds no truth here: everything can be recomputed from PostgreSQL; a Redis outage only
blinds the screens for a while and never stops a send.
"""

import functools
import json
import logging
import time
from enum import StrEnum

from redis.exceptions import RedisError

from omnium.delivery import heartbeats
from omnium.redis_client import redis_client

log = logging.getLogger(__name__)

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
    pipe.lpush(EVENT_LOG, _event(kind, destination_id, time.time(), **details))
    pipe.ltrim(EVENT_LOG, 0, EVENT_LOG_SIZE - 1)


def _event(kind: str, destination_id: int | None, at: float, **details) -> str:
    return json.dumps({"at": at, "kind": kind, "destination": destination_id, **details}, default=str)


# A send's status and its "sent" event (and the keys to forget) in one script call: as a
# pipeline of four commands, redis-py's building and parsing of each was a tenth of a delivery
# worker's Python time in a fan-out to 5,000 destinations (py-spy --gil, bench/scale.py).
# KEYS: the status hash, the event log, then the keys to delete; ARGV: updated (also
# last_success), the status, the event, the log's last index. A send leaves no errors and no
# back-off: the same fields and values _status_into writes.
PUBLISH_SENT = """
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'errors', '0', 'backoff_s', '0.0', 'updated', ARGV[1],
           'last_success', ARGV[1])
redis.call('LPUSH', KEYS[2], ARGV[3])
redis.call('LTRIM', KEYS[2], 0, ARGV[4])
for i = 3, #KEYS do redis.call('DEL', KEYS[i]) end
"""


def publish_sent(destination_id: int, status: Status, forget: tuple[str, ...] = (), **details) -> None:
    """A send's status and its "sent" event, in one round trip (every send publishes both);
    the keys in `forget` are deleted in the same round trip."""

    def push(r):
        now = time.time()
        _publish_sent_script(r)(keys=[destination_key(destination_id), EVENT_LOG, *forget],
                                args=[now, status, _event("sent", destination_id, now, **details), EVENT_LOG_SIZE - 1])

    _quietly(push)


@functools.cache
def _publish_sent_script(client):
    return client.register_script(PUBLISH_SENT)


def read_events(limit: int = EVENT_LOG_SIZE) -> list[dict]:
    raw = _quietly(lambda r: r.lrange(EVENT_LOG, 0, limit - 1)) or []
    return [json.loads(item) for item in raw]


def beat(heartbeat: heartbeats.WorkerHeartbeat, destination_ids: frozenset[int]) -> None:
    """One heartbeat of a delivery worker, naming the destinations it serves."""
    _quietly(lambda r: heartbeat.beat(r, time.time(), destination_ids))


def read(destination_id: int) -> dict:
    """The published health of a destination, with `stalled` when no live worker serves it."""
    def fetch(r):
        return r.hgetall(destination_key(destination_id)), heartbeats.served(r, [destination_id])[0]

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
    try:
        return action(redis_client())
    except RedisError:
        log.warning("health not published: Redis unavailable", exc_info=True)
        return None
