"""The file a subscription sends: the current version, in the subscription's shape.

Many destinations take the same version of the same file, so each delivery process keeps
the last bodies and rendered shapes it used (an LRU bounded in bytes): a new calendar
version is read from PostgreSQL and rendered once per process, not once per destination.
The senders of a new version all ask at the same moment, so a read or a render in progress
is shared (single-flight) rather than repeated by every thread that missed the cache.
The cache key includes the version, so a cached copy is never stale.
"""

from dataclasses import dataclass
from datetime import datetime

from omnium.caching.memory_lru import ByteBoundedLru
from omnium.clients.transforms import TRANSFORMS
from omnium.clients.transforms.base import Marks, Rendered
from omnium.database.server_binding import server_binding_cursor

CACHE_BYTES = 96 * 1024 * 1024


@dataclass(frozen=True)
class CurrentVersion:
    doc_key: str
    seq: int
    content_hash: bytes
    changed_at: datetime
    feed_type: str
    filter: str
    built_at: datetime  # with seq, names the exact bytes (even if a test database restarts seq)


def _size(value: bytes | Rendered) -> int:
    return len(value.body if isinstance(value, Rendered) else value)


# Bodies by (doc_key, seq, built_at); renders by that plus transform and marks.
_cache = ByteBoundedLru(CACHE_BYTES, size_of=_size)


def forget_all() -> None:
    """Drop every kept body and render (for tests that copy the same versions back)."""
    _cache.clear()


def render(version: CurrentVersion, transform: str, marks: Marks) -> Rendered:
    key = (version.doc_key, version.seq, version.built_at, transform, marks)
    return _cache.get_or_make(key, lambda: TRANSFORMS[transform].render(_body(version), marks))


def _body(version: CurrentVersion) -> bytes:
    return _cache.get_or_make((version.doc_key, version.seq, version.built_at), lambda: _read_body(version))


def _read_body(version: CurrentVersion) -> bytes:
    # By seq, not just doc_key: a newer version may have replaced the row meanwhile; then
    # this version's body is gone and the newer one is sent on the next turn.
    with server_binding_cursor(binary_results=True) as cursor:
        cursor.execute("SELECT seq, built_at, body FROM feeds_feeddocument WHERE doc_key = %s", [version.doc_key])
        row = cursor.fetchone()
    if row is None or (row[0], row[1]) != (version.seq, version.built_at):
        raise VersionMoved(version.doc_key)
    return bytes(row[2])


class VersionMoved(Exception):
    """The file got a newer version between reading its version and its body."""
