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

import atexit
import functools
import json
import logging
import threading
import time
from dataclasses import dataclass
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


# Sends' statuses and "sent" events (and the keys to forget), any number in one script call:
# as a pipeline of four commands a send, redis-py's building and parsing of each was a tenth
# of a delivery worker's Python time in a fan-out to 5,000 destinations (py-spy --gil,
# bench/scale.py). KEYS: the event log, each send's status hash, then the keys to delete;
# ARGV: the log's last index, the number of sends, then per send: when (updated, and
# last_success), its status, its event. A send leaves no errors and no back-off: the same
# fields and values _status_into writes, unless a status written after the send (a pause
# from the admin, while the send waited in a batch) is there: that one stays.
PUBLISH_SENT = """
for i = 1, tonumber(ARGV[2]) do
  local at, status, event = ARGV[3 * i], ARGV[3 * i + 1], ARGV[3 * i + 2]
  local key = KEYS[1 + i]
  if tonumber(redis.call('HGET', key, 'updated') or '0') > tonumber(at) then
    redis.call('HSET', key, 'last_success', at)
  else
    redis.call('HSET', key, 'status', status, 'errors', '0', 'backoff_s', '0.0', 'updated', at,
               'last_success', at)
  end
  redis.call('LPUSH', KEYS[1], event)
end
redis.call('LTRIM', KEYS[1], 0, ARGV[1])
for i = tonumber(ARGV[2]) + 2, #KEYS do redis.call('DEL', KEYS[i]) end
"""


@dataclass(frozen=True)
class _Sent:
    destination_id: int
    at: float
    status: Status
    event: str
    forget: tuple[str, ...]


def publish_sent(destination_id: int, status: Status, forget: tuple[str, ...] = (), **details) -> None:
    """A send's status and its "sent" event; the keys in `forget` are deleted with them. At
    once, or with the next batch in a process that publishes in batches (a delivery worker)."""
    now = time.time()
    sent = _Sent(destination_id, now, status, _event("sent", destination_id, now, **details), forget)
    if not _batches.add(sent):
        _quietly(lambda r: _publish_sent_into(r, [sent]))


def _publish_sent_into(r, sends: list[_Sent]) -> None:
    keys = [EVENT_LOG, *(destination_key(s.destination_id) for s in sends), *(k for s in sends for k in s.forget)]
    args = [EVENT_LOG_SIZE - 1, len(sends), *(value for s in sends for value in (s.at, s.status, s.event))]
    _publish_sent_script(r)(keys=keys, args=args)


@functools.cache
def _publish_sent_script(client):
    return client.register_script(PUBLISH_SENT)


class _SentBatches:
    """Sends' statuses gathered for a short while and published in one round trip.

    Each send's own round trip (a script call) was about 9 % of a delivery worker's Python
    time in a fan-out to 5,000 destinations, and a system call each on a machine where they
    cost. Gathered for BATCH_S, a fan-out's sends publish a dozen at a time; the screens see
    a send that much later, and a worker that dies loses that much of them (Redis holds no
    truth: the proofs are in PostgreSQL). Every other health write takes the batch out first,
    so a destination's statuses still land in the order they were made."""

    BATCH_S = 0.05

    def __init__(self):
        self._waiting: list[_Sent] | None = None  # None: not batching, each send publishes at once
        self._lock = threading.Lock()  # the list
        self._in_order = threading.Lock()  # a batch and any later health write

    def start(self) -> None:
        """Publish sends in batches from now on, from a thread of this process's own (and what
        waits at its exit)."""
        with self._lock:
            if self._waiting is not None:
                return
            self._waiting = []
        threading.Thread(target=self._publish_until_stopped, name="omnium-sent-batches", daemon=True).start()
        atexit.register(self.stop)

    def stop(self) -> None:
        """Publish what waits; each send at once from now on."""
        with self._lock:
            sends, self._waiting = self._waiting, None
        if sends:
            _quietly(lambda r: _publish_sent_into(r, sends))

    def add(self, sent: _Sent) -> bool:
        with self._lock:
            if self._waiting is None:
                return False
            self._waiting.append(sent)
            return True

    def after_the_waiting(self, r, action):
        """`action(r)` once the sends waiting are published; at once in a process that does
        not batch (an API process's reads are not queued behind one another)."""
        if self._waiting is None:
            return action(r)
        with self._in_order:
            with self._lock:
                sends = self._waiting
                if sends:
                    self._waiting = []
            if sends:
                _publish_sent_into(r, sends)
            return action(r)

    def _publish_until_stopped(self) -> None:
        while self._waiting is not None:
            time.sleep(self.BATCH_S)
            try:
                publish_waiting_sent()
            except Exception:  # this thread must go on, or the statuses would pile up unpublished
                log.warning("sends' statuses not published", exc_info=True)


_batches = _SentBatches()


def start_batching_sent() -> None:
    """From now on this process publishes its sends' statuses in batches."""
    _batches.start()


def publish_waiting_sent() -> None:
    """The sends waiting in a batch, now."""
    _quietly(lambda r: None)  # every health write publishes the waiting sends first


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
    """`action` on Redis, after the sends waiting in a batch; None if Redis is unavailable."""
    try:
        return _batches.after_the_waiting(redis_client(), action)
    except RedisError:
        log.warning("health not published: Redis unavailable", exc_info=True)
        return None
