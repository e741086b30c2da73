"""An in-memory cache bounded in bytes, least recently used dropped first, whose misses are
filled once however many threads miss at the same moment (single-flight).

Used for the files a pull API process serves, and for the bodies, renders and gzips a
delivery process sends: in both, many threads want the same new version at the same instant.
"""

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

from omnium.caching.single_flight import SingleFlight


class ByteBoundedLru:
    def __init__(self, limit_bytes: int, size_of: Callable[[object], int] = len):
        self.limit_bytes = limit_bytes
        self.used_bytes = 0
        self._size_of = size_of
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._flights = SingleFlight()

    def get(self, key: Hashable):
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            return entry[0]

    def get_many(self, keys) -> list:
        """The kept value of each key (None where none is kept), taking the lock once."""
        with self._lock:
            found = [self._items.get(key) for key in keys]
            for key, entry in zip(keys, found):
                if entry is not None:
                    self._items.move_to_end(key)
        return [None if entry is None else entry[0] for entry in found]

    def put(self, key: Hashable, value) -> None:
        """Keep `value` (or account for its grown size when it is already kept); a value larger
        than the whole limit is not kept."""
        size = self._size_of(value)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.used_bytes -= old[1]
            if size > self.limit_bytes:
                return
            self._items[key] = (value, size)
            self.used_bytes += size
            while self.used_bytes > self.limit_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self.used_bytes -= dropped

    def get_or_make(self, key: Hashable, make: Callable[[], object]):
        """The kept value of `key`, or `make()` kept: made once for all threads asking now."""
        value = self.get(key)
        return value if value is not None else self._flights.do(key, lambda: self._made_and_kept(key, make))

    def _made_and_kept(self, key: Hashable, make):
        value = self.get(key)  # made by a flight that ended just before this one began
        if value is None:
            value = make()
            self.put(key, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.used_bytes = 0

    def __len__(self) -> int:
        return len(self._items)


class ExpiringLru:
    """A set of keys, each remembered until its time to live passes, at most `limit` of them
    (least recently remembered dropped first): what a process remembers must not grow with
    every distinct key a client can make up."""

    def __init__(self, limit: int, ttl_s: float, clock: Callable[[], float] = time.monotonic):
        self.limit, self.ttl_s = limit, ttl_s
        self._clock = clock
        self._until: OrderedDict[Hashable, float] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, key: Hashable) -> None:
        with self._lock:
            self._until.pop(key, None)
            self._until[key] = self._clock() + self.ttl_s
            while len(self._until) > self.limit:
                self._until.popitem(last=False)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            until = self._until.get(key)
            if until is not None and until <= self._clock():
                del self._until[key]  # expired: forgotten on the next look
                until = None
            return until is not None

    def forget(self, key: Hashable) -> None:
        with self._lock:
            self._until.pop(key, None)

    def __len__(self) -> int:
        return len(self._until)
