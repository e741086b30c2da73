"""The files an API process keeps in memory, bounded in bytes, least recently used dropped first."""

import gzip
import time

from omnium.caching.memory_lru import ByteBoundedLru

NEVER_CONFIRMED = 0  # generations of the invalidation channel start at 1


class CachedFile:
    """One version of one file as the API serves it: gzipped as stored in Redis, and plain
    once a client that does not accept gzip has asked (decompressed once, then kept)."""

    __slots__ = ("version", "etag", "http_etag", "gz", "_plain", "confirmed_at", "current_in")

    def __init__(self, version: int, etag: str, gz: bytes, plain: bytes | None = None):
        self.version = version
        self.etag = etag
        self.http_etag = f'W/"{etag}"'  # weak: the gzip and plain bodies are the same file
        self.gz = gz
        self._plain = plain
        self.confirmed_at = time.monotonic()  # last time Redis said this is current
        # The invalidation channel's generation in which Redis said this is current; it stays
        # current until Redis names its key (see invalidations.py).
        self.current_in = NEVER_CONFIRMED

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


class FileMemory(ByteBoundedLru):
    """The files an API process keeps, by their cache key; a file's size grows when its
    plain body is first needed, and putting it again accounts for that."""

    def __init__(self, limit_bytes: int):
        super().__init__(limit_bytes, size_of=lambda file: file.size)
