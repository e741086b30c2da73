"""Connections kept from task to task, and when a kept one is checked before a task uses it."""

import time

import psycopg
import pytest
from django.db import OperationalError, connection

from omnium.workers import database_connections
from tests import child_processes


def _task(succeeded: bool = True) -> int:
    """A task that reads its connection's server process id."""
    database_connections.before_task()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
    except OperationalError:
        database_connections.after_task(succeeded=False)
        raise
    database_connections.after_task(succeeded=succeeded)
    return pid


def _cut(pid: int) -> None:
    """End the server process, as a database restart or a network cut would (from a
    connection of its own)."""
    with psycopg.connect(child_processes.database_url(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])


@pytest.mark.django_db(transaction=True)
def test_a_connection_cut_while_idle_is_replaced_before_the_next_task_uses_it():
    pid = _task()
    _cut(pid)
    time.sleep(database_connections.RECENTLY_SOUND_S + 0.05)

    assert _task() != pid, "checked (SELECT 1), found dead, and replaced"


@pytest.mark.django_db(transaction=True)
def test_a_connection_a_task_used_a_moment_ago_is_not_checked_again():
    """No SELECT 1 before each drain of a fan-out: a cut within that moment fails one task."""
    pid = _task()
    assert _task() == pid
    _cut(pid)

    with pytest.raises(OperationalError):
        _task()
    assert _task() != pid, "the failed task closed it; the next one opened another"
