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
"""

from celery import states
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections, connections


def before_task() -> None:
    close_old_connections()


def after_task(succeeded: bool) -> None:
    if succeeded:
        close_old_connections()
    else:
        connections.close_all()  # this thread's connections only


@task_prerun.connect(dispatch_uid="omnium-connections-before-task")
def _before_task(**kwargs) -> None:
    before_task()


@task_postrun.connect(dispatch_uid="omnium-connections-after-task")
def _after_task(state=None, **kwargs) -> None:
    after_task(succeeded=state == states.SUCCESS)
