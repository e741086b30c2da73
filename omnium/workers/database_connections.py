"""Database connections in Celery workers: kept from task to task while they are sound.

Celery's Django fixup closes every connection before and after every task, so each task
opened a new PostgreSQL connection: a new server process that loads its catalogue caches
before its first query. Kept instead, the delivery bench's machine went from 1.93 to 1.75 of
its 2 cores busy during a burst, for the same work.

Here a worker treats a task as Django treats a request: before and after it, connections that
are broken or older than CONN_MAX_AGE are closed (Django's close_old_connections), and with
CONN_HEALTH_CHECKS a kept connection is checked before its first use, so one the server
dropped while the worker was idle is replaced. After a task that failed, the thread's
connections are closed outright: an exception such as a soft time limit may have interrupted
a query and left its connection in a state Django cannot see.
settings.CELERY_DB_REUSE_MAX keeps Celery's own fixup from closing them every time.

The check is a round trip (SELECT 1) before each task's first query: in a fan-out, one in
four of a drain's statements, on a connection its thread used a few milliseconds earlier.
So a connection used by a task that succeeded less than RECENTLY_SOUND_S ago is not checked
again (pgbouncer's server_check_delay, whose default is 30 s): a server that went away
within that moment fails the one task that finds out, and the next task checks.
"""

import math
import threading
import time

from celery import states
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections, connections

RECENTLY_SOUND_S = 0.25
_this_thread = threading.local()  # .unchecked: the connections the current task did not check


def before_task() -> None:
    close_old_connections()
    now = time.monotonic()
    _this_thread.unchecked = set()
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and now - getattr(connection, "sound_at", -math.inf) < RECENTLY_SOUND_S:
            connection.health_check_done = True
            _this_thread.unchecked.add(connection.alias)


def after_task(succeeded: bool) -> None:
    if not succeeded:
        connections.close_all()  # this thread's connections only
        return
    now, unchecked = time.monotonic(), getattr(_this_thread, "unchecked", set())
    for connection in connections.all(initialized_only=True):
        # Checked or opened by this task (close_old_connections cleared the mark before it),
        # and every query of a task that succeeded, succeeded. One it did not check keeps
        # the time of its last check: a check every RECENTLY_SOUND_S at most, not never.
        if connection.connection is not None and connection.health_check_done and connection.alias not in unchecked:
            connection.sound_at = now
    close_old_connections()


@task_prerun.connect(dispatch_uid="omnium-connections-before-task")
def _before_task(**kwargs) -> None:
    before_task()


@task_postrun.connect(dispatch_uid="omnium-connections-after-task")
def _after_task(state=None, **kwargs) -> None:
    after_task(succeeded=state == states.SUCCESS)
