"""Single-flight: many threads asking for the same thing share one call (a file the pull API
reads from PostgreSQL, a body compressed for several Redis destinations).

The first caller for a key runs the call; callers that arrive while it runs wait for its
result (or its exception) instead of making their own. A caller arriving after it finished
starts a new flight, by then the result is in Redis and memory, so that is rare.
"""

import threading
from collections.abc import Hashable


class _Flight:
    __slots__ = ("done", "result", "error")

    def __init__(self):
        self.done = threading.Event()
        self.result = None
        self.error: BaseException | None = None


class SingleFlight:
    def __init__(self):
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()

    def do(self, key: Hashable, call):
        with self._lock:
            flight = self._flights.get(key)
            leader = flight is None
            if leader:
                flight = self._flights[key] = _Flight()
        if not leader:
            flight.done.wait()
            if flight.error is not None:
                raise flight.error
            return flight.result
        try:
            flight.result = call()
            return flight.result
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()
