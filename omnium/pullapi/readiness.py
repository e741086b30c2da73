"""What a load balancer asks an API process, unauthenticated and cheap:

- `/healthz`: the process answers requests at all (nothing else is looked at: a process
  stuck in its application or its server does not answer it);
- `/readyz`: it can serve pulls: its catalogue of keys and entitlements is loaded and fresh
  enough, and at least one place holds the files (the pull cache's Redis, PostgreSQL, or
  files already in its memory). 503 with the failing checks otherwise, so the balancer takes
  it out of rotation until it is ready again.

Neither is throttled, counted as a pull or logged per request (`log_scrubbing.QuietProbes`:
a balancer asks every second or two).
"""

import logging
import time

import redis
from django.db import DatabaseError, connection
from django.http import JsonResponse

from omnium.conf import omnium_setting
from omnium.pullapi import change_notices
from omnium.pullapi.catalogue import holder
from omnium.pullapi.pull_redis import pull_redis
from omnium.pullapi.read_path import read_path

log = logging.getLogger(__name__)


def healthz(request):
    return JsonResponse({"status": "ok"})


def readyz(request):
    # A load balancer sends no pull to a server until it is ready: the catalogue a pull would
    # load (key_authentication) is loaded here too, or a new server would never become ready.
    try:
        change_notices.ensure_current()
    except Exception:  # the check below reports a catalogue not loaded
        log.warning("readiness: could not load the catalogue", exc_info=True)
    checks = {"catalogue": _catalogue_fresh(), "redis": _redis_answers(), "postgresql": _database_answers(),
              "files_in_memory": len(read_path().memory) > 0}
    ready = checks["catalogue"] and (checks["redis"] or checks["postgresql"] or checks["files_in_memory"])
    return JsonResponse({"status": "ready" if ready else "not ready", "checks": checks}, status=200 if ready else 503)


def _catalogue_fresh() -> bool:
    """Loaded, and reloaded within twice its longest interval (its listener thread is alive)."""
    snapshot = holder.snapshot
    return snapshot.loaded_at > 0 and time.monotonic() - snapshot.loaded_at < 2 * omnium_setting("PULL_CATALOGUE_MAX_AGE_S")


def _redis_answers() -> bool:
    try:
        return bool(pull_redis().ping())
    except redis.RedisError:
        return False


def _database_answers() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return True
    except DatabaseError:
        return False
