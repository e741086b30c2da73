"""The files an API process keeps in memory, bounded in bytes, least recently used dropped first."""

import gzip
import threading
import time
from collections import OrderedDict


class CachedFile:
    """One version of one file as the API serves it: gzipped as stored in Redis, and plain
    once a client that does not accept gzip has asked (decompressed once, then kept)."""

    __slots__ = ("version", "etag", "http_etag", "gz", "_plain", "confirmed_at")

    def __init__(self, version: int, etag: str, gz: bytes, plain: bytes | None = None):
        self.version = version
        self.etag = etag
        self.http_etag = f'W/"{etag}"'  # weak: the gzip and plain bodies are the same file
        self.gz = gz
        self._plain = plain
        self.confirmed_at = time.monotonic()  # last time Redis said this is current

    @property
    def plain(self) -> bytes:
        if self._plain is None:
            self._plain = gzip.decompress(self.gz)  # a race only decompresses twice
        return self._plain

    @property
    def has_plain(self) -> bool:
        return self._plain is not None

    @property
    def size(self) -> int:
        return len(self.gz) + (len(self._plain) if self._plain is not None else 0)


class FileMemory:
    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes
        self.used_bytes = 0
        self._files: OrderedDict[str, tuple[CachedFile, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedFile | None:
        with self._lock:
            entry = self._files.get(key)
            if entry is None:
                return None
            self._files.move_to_end(key)
            return entry[0]

    def put(self, key: str, file: CachedFile) -> None:
        """Keep `file` (or account for its grown size when it is already kept)."""
        size = file.size
        with self._lock:
            old = self._files.pop(key, None)
            if old is not None:
                self.used_bytes -= old[1]
            if size > self.limit_bytes:
                return
            self._files[key] = (file, size)
            self.used_bytes += size
            while self.used_bytes > self.limit_bytes:
                _, (_, dropped) = self._files.popitem(last=False)
                self.used_bytes -= dropped

    def __len__(self) -> int:
        return len(self._files)
