"""`manage.py worker_ready <node>`: what a Kubernetes exec probe or a systemd timer runs to know a
Celery worker is alive and consuming (its heartbeat in PostgreSQL)."""

import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.utils import timezone

from devtools.waiting import wait_until
from omnium.alerts.models import WorkerHeartbeat
from tests import child_processes


@pytest.mark.django_db
def test_a_recent_heartbeat_is_ready_and_an_old_or_missing_one_is_not(capsys):
    WorkerHeartbeat.objects.create(hostname="live@a", queues=["build.live"], beat_at=timezone.now())
    WorkerHeartbeat.objects.create(hostname="live@b", queues=["build.live"],
                                   beat_at=timezone.now() - timedelta(seconds=60))

    call_command("worker_ready", "live@a")
    out = capsys.readouterr().out
    assert "live@a: ready" in out and "consuming build.live" in out
    with pytest.raises(CommandError, match="live@b: last heartbeat 60 s ago"):
        call_command("worker_ready", "live@b")
    with pytest.raises(CommandError, match="live@c: no heartbeat ever"):
        call_command("worker_ready", "live@c")


@pytest.mark.worker
def test_a_running_worker_is_ready_by_the_probe_command_and_not_once_stopped(transactional_db):
    node = f"probed@{socket.gethostname()}"  # devtools.processes names workers <name>@%h
    probe, env = [sys.executable, "manage.py", "worker_ready", node], child_processes.child_environment()
    worker = child_processes.start_worker(["build.live"], "probed")
    try:
        wait_until(lambda: WorkerHeartbeat.objects.filter(hostname=node).exists(), 15, message="its first heartbeat")
        ready = subprocess.run(probe, cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=60)
        assert ready.returncode == 0, ready.stderr
        assert "consuming build.live" in ready.stdout
    finally:
        worker.stop()
    WorkerHeartbeat.objects.filter(hostname=node).update(beat_at=timezone.now() - timedelta(seconds=60))
    gone = subprocess.run(probe, cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=60)
    assert gone.returncode == 1 and "gone or stuck" in gone.stderr
