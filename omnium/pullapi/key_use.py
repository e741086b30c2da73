"""When each pull key was last used, without a write per request: a request notes its key in
this process's memory, and the catalogue listener (a thread of each API process) writes the
keys noted since to PostgreSQL in one UPDATE, at most every OMNIUM_PULL_KEY_USE_WRITE_S (60 s).
So a key's last use is known within a minute or so, and the admin shows it."""

import logging
import time

from django.db import close_old_connections, connections
from django.db.models.functions import Now

from omnium.clients.models import ApiKey
from omnium.conf import omnium_setting

log = logging.getLogger(__name__)

_noted: set[int] = set()
_written_at = 0.0


def note(key_id: int) -> None:
    _noted.add(key_id)  # one set operation per request (atomic under the GIL)


def write_if_due() -> int:
    """From the listener's thread: the keys noted since the last write, written now if the
    interval has passed; how many were written."""
    global _noted, _written_at
    now = time.monotonic()
    if now - _written_at < omnium_setting("PULL_KEY_USE_WRITE_S") or not _noted:
        return 0
    # Swapped, not cleared: a request noting a key meanwhile lands in one set or the other.
    noted, _noted, _written_at = _noted, set(), now
    try:
        close_old_connections()
        return ApiKey.objects.filter(pk__in=noted).update(last_used_at=Now())
    except Exception:  # the time of use is a convenience: never a reason to stop listening
        log.warning("could not write the last use of %d pull keys", len(noted), exc_info=True)
        return 0
    finally:
        connections.close_all()  # this thread's own connection only
