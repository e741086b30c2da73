"""Delivery workers' heartbeats in Redis: which workers are alive, and which destinations each
serves, so that a destination no live worker serves shows as stalled.

Keys, each written by its worker every OMNIUM_HEARTBEAT_INTERVAL_S with a TTL of three beats
(Redis's clock: worker hosts' clocks may differ), so that a dead worker's keys expire:
  omnium:workers                         set: the names of the workers that have beaten
  omnium:worker:<name>                   the time of the worker's last beat
  omnium:worker:<name>:destinations      set: the destinations whose queues it consumes

A beat costs three commands whatever the number of destinations: the set of destinations is
written again only when it changed, or when Redis lost it (a restart). A key per destination,
refreshed every beat, was 10,000 commands every 5 s with 5,000 destinations and two workers,
and a twelfth of a delivery worker's Python time during a fan-out.
"""

from omnium import redis_keys
from omnium.conf import omnium_setting

# SADD takes this many members at once: one command of 5,000 held Redis for a moment.
SADD_CHUNK = 1000


def interval_s() -> float:
    return omnium_setting("HEARTBEAT_INTERVAL_S")


def ttl_ms() -> int:
    """A heartbeat outlives two missed beats: its absence means the worker is gone."""
    return int(3 * interval_s() * 1000)


class WorkerHeartbeat:
    """The heartbeat of one delivery worker; `beat` is called every interval by one thread."""

    def __init__(self, name: str):
        self.name = name
        self.written: frozenset[int] | None = None  # the destinations last written to Redis

    def beat(self, r, now: float, destination_ids: frozenset[int]) -> None:
        """One beat through the Redis client `r` (raises RedisError)."""
        pipe = r.pipeline(transaction=False)
        pipe.set(redis_keys.worker(self.name), now, px=ttl_ms())
        pipe.sadd(redis_keys.WORKERS, self.name)
        pipe.pexpire(redis_keys.worker_destinations(self.name), ttl_ms())
        *_, still_there = pipe.execute()
        if not still_there or destination_ids != self.written:
            self._write_served(r, destination_ids)
        self.written = destination_ids

    def _write_served(self, r, destination_ids: frozenset[int]) -> None:
        """Replace the set of destinations served, in one transaction: a reader never sees it
        half written."""
        pipe = r.pipeline(transaction=True)
        pipe.delete(redis_keys.worker_destinations(self.name))
        ordered = sorted(destination_ids)
        for start in range(0, len(ordered), SADD_CHUNK):
            pipe.sadd(redis_keys.worker_destinations(self.name), *ordered[start:start + SADD_CHUNK])
        pipe.pexpire(redis_keys.worker_destinations(self.name), ttl_ms())
        pipe.execute()


def served(r, destination_ids: list[int]) -> list[bool]:
    """Whether a live worker serves each destination, in two round trips; forgets the names
    of workers whose heartbeat expired."""
    names = sorted(name.decode() for name in r.smembers(redis_keys.WORKERS))
    pipe = r.pipeline(transaction=False)
    for name in names:
        pipe.exists(redis_keys.worker(name))
        pipe.smismember(redis_keys.worker_destinations(name), destination_ids)
    answers = pipe.execute() if names else []
    alive = [(name, members) for name, exists, members in zip(names, answers[::2], answers[1::2], strict=True)
             if exists]
    if gone := set(names) - {name for name, _ in alive}:
        r.srem(redis_keys.WORKERS, *gone)
    return [any(members[n] for _, members in alive) for n in range(len(destination_ids))]
