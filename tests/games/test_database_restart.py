"""A workflow command across a PostgreSQL restart: a slow answer, not an error."""

import logging
import subprocess
import threading
import time
from pathlib import Path

import pytest
from django.db import DatabaseError, connection

from omnium.games import workflow
from omnium.games.database_restarts import workflow_command
from omnium.games.models import Competitor, Fixture

DOWN_FOR_S = 2.0


def postgresql(action: str) -> None:
    """Stop or start this machine's PostgreSQL cluster (a fast stop cuts every session)."""
    version = sorted(p.name for p in Path("/etc/postgresql").iterdir())[0]
    fast = ["-m", "fast"] if action == "stop" else []
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action, *fast],
                   check=True, capture_output=True, timeout=60)


@pytest.mark.servers
@pytest.mark.alone  # it stops and starts the machine's PostgreSQL, under every other test's feet
def test_a_workflow_command_across_a_postgresql_restart_succeeds(small_games, caplog):
    fixture = Fixture.objects.filter(games=small_games).order_by("starts_at", "id").first()
    entry_id = fixture.competitors.first().entry_id
    connection.close()
    postgresql("stop")
    comes_back = threading.Timer(DOWN_FOR_S, postgresql, args=["start"])
    comes_back.start()
    started = time.monotonic()
    try:
        with caplog.at_level(logging.WARNING, logger="omnium.games.database_restarts"):
            workflow.record_score(fixture.pk, {entry_id: 42})  # sent while the database is down
    finally:
        comes_back.join(60)
        connection.close()

    assert time.monotonic() - started >= DOWN_FOR_S * 0.8, "it waited for the database to come back"
    assert "running it again" in caplog.text
    assert Competitor.objects.get(fixture=fixture, entry_id=entry_id).score == 42


def test_an_error_that_is_not_a_lost_connection_is_not_run_again(db):
    calls = []

    @workflow_command
    def divides_by_zero():
        calls.append(1)
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1/0")

    with pytest.raises(DatabaseError):
        divides_by_zero()
    assert calls == [1]
