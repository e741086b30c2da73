"""Invalidations: an API process learns that a kept file changed in Redis the moment it changes.

Redis's server-assisted client-side caching (CLIENT TRACKING, broadcast mode): one connection
per API process asks Redis to send it the name of every key under the pull cache's prefixes
that changes: a Redis destination's write, the read path's own fill, an expiry, an eviction (a
flush sends "everything"). The connection redirects the invalidations to itself and subscribes
to their channel, `__redis__:invalidate` (the RESP2 form of tracking), so they arrive as plain
pub/sub messages that redis-py's public connection methods read: no push handler to replace.
So a kept file that the process has confirmed with Redis since the connection came up is
current until its key is named, and a hit asks Redis nothing (bench/pull.py: the per-request
`HGET v` was the largest single cost of a 304).

Trust lasts only while the channel provably works. When the connection drops (Redis restart,
CLIENT KILL, a PING unanswered for SILENCE_LIMIT_S), nothing is trusted any more: the read
path asks Redis for the version on every request, as it did before this channel existed,
until the connection is back and tracking is on again. Then every file is confirmed once more
by one `HGET` on its next request (a new generation), so a write missed while the channel was
down is never hidden.
"""

import logging
import threading
import time

import redis

from omnium import redis_keys
from omnium.pullapi.file_memory import NEVER_CONFIRMED
from omnium.transports.redis_servers import redis_for

log = logging.getLogger(__name__)

TRACKED_PREFIXES = (redis_keys.SHARED_FILE_PREFIX, redis_keys.PUBLIC_FILE_PREFIX)
CLIENT_NAME = "omnium-pull-invalidations"
INVALIDATION_CHANNEL = "__redis__:invalidate"  # where Redis sends a redirected client's invalidations
RECONNECT_EVERY_S = 0.5  # until then each request costs one HGET, as before this channel existed
PING_AFTER_SILENT_S = 1.0
# A connection that went silent without closing (a cut network sends no RST) is trusted at
# most this long: a PING goes out after PING_AFTER_SILENT_S, and its answer is due soon after.
SILENCE_LIMIT_S = 3.0


class Invalidations:
    """Which kept files are known current without asking Redis.

    A file is known current when its `current_in` equals `generation`. `generation` is None
    while the channel is down (nothing is known), and moves on whenever the channel comes
    back or Redis is flushed (everything confirmed before is forgotten at once).

    A request confirms a file with a ticket taken before it asked Redis: if any invalidation
    arrived in between, the answer it got may already be old, so the file is not confirmed
    (its next request asks again). The lock orders confirmations against invalidations; the
    hot path only compares two integers and takes no lock.
    """

    def __init__(self, memory):
        self.memory = memory
        self.generation: int | None = None
        self.channel_breaks = 0
        self.listening_since: float | None = None  # wall clock, for the health figure
        self._last_generation = NEVER_CONFIRMED
        self._changes = 0
        self._lock = threading.Lock()

    def ticket(self) -> int:
        return self._changes

    def confirm(self, file, ticket: int) -> None:
        with self._lock:
            if ticket == self._changes and self.generation is not None:
                file.current_in = self.generation

    def changed(self, keys: list[bytes]) -> None:
        with self._lock:
            self._changes += 1
            for key in keys:
                kept = self.memory.get(key.decode())
                if kept is not None:
                    kept.current_in = NEVER_CONFIRMED

    def channel_up(self) -> None:
        """Tracking is on: from now on every change is sent to us."""
        with self._lock:
            self._new_generation()
            self.listening_since = time.time()

    def everything_changed(self) -> None:
        """A flush: forget every confirmation, keep listening."""
        with self._lock:
            self._new_generation()

    def _new_generation(self) -> None:
        self._changes += 1
        self._last_generation += 1
        self.generation = self._last_generation

    def channel_down(self) -> None:
        with self._lock:
            self._changes += 1
            if self.generation is not None:
                self.channel_breaks += 1
            self.generation = None
            self.listening_since = None

    @property
    def listening(self) -> bool:
        return self.generation is not None


class InvalidationListener(threading.Thread):
    """The one connection of a process that receives invalidations, reconnecting forever."""

    def __init__(self, url: str, invalidations: Invalidations):
        super().__init__(name="pull-invalidations", daemon=True)
        self.invalidations = invalidations
        self.client_id: int | None = None  # this connection's CLIENT ID, for tests and operators
        # A Sentinel-managed pool's connections ask the Sentinels for the primary at each connect.
        self._pool = redis_for(url, protocol=2, client_name=CLIENT_NAME, socket_connect_timeout=0.5,
                               socket_timeout=1.0).connection_pool
        self._stopping = threading.Event()
        self._connection = None

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._listen()
            except Exception as exc:  # never let the thread die: Redis errors, a socket closed by stop()
                if self.invalidations.listening and not self._stopping.is_set():
                    log.warning("pull cache invalidations lost (%r); asking Redis on every request", exc)
            finally:
                self.invalidations.channel_down()
                self._disconnect()
            self._stopping.wait(RECONNECT_EVERY_S)

    def stop(self) -> None:
        self._stopping.set()
        self._disconnect()

    def _listen(self) -> None:
        connection = self._connection = self._pool.make_connection()
        connection.connect()
        self.client_id = self._call(connection, "CLIENT", "ID")
        self._call(connection, "CLIENT", "TRACKING", "ON", "BCAST", "REDIRECT", self.client_id,
                   *(word for prefix in TRACKED_PREFIXES for word in ("PREFIX", prefix)))
        self._call(connection, "SUBSCRIBE", INVALIDATION_CHANNEL)  # from here on, only messages and PONGs
        self.invalidations.channel_up()
        log.info("pull cache invalidations on (generation %s)", self.invalidations.generation)
        self._receive(connection)

    def _receive(self, connection) -> None:
        last_heard = time.monotonic()
        while not self._stopping.is_set():
            if connection.can_read(timeout=PING_AFTER_SILENT_S):
                self._handle(connection.read_response())
                last_heard = time.monotonic()
            elif time.monotonic() - last_heard > SILENCE_LIMIT_S:
                raise redis.ConnectionError(f"no answer from Redis for {SILENCE_LIMIT_S} s")
            else:
                connection.send_command("PING")

    def _handle(self, message) -> None:
        """A message [b"message", channel, keys] (keys None: a flush), or a PONG."""
        if message[0] != b"message":
            return
        if message[2] is None:
            self.invalidations.everything_changed()
        else:
            self.invalidations.changed(message[2])

    @staticmethod
    def _call(connection, *command):
        connection.send_command(*command)
        return connection.read_response()

    def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.disconnect()
