"""A process group's metrics directory is chosen before prometheus_client is imported: by the
launcher for a Celery worker, by omnium/wsgi.py for an API process."""

import os
import subprocess
import sys

import prometheus_client  # noqa: F401 (loaded, as in every test process and Celery worker)
import pytest

from omnium.metrics import process_files

SHOW_DIRECTORY_AND_PID = ("import os, sys, prometheus_client.values as v; "
                          "print(os.environ['PROMETHEUS_MULTIPROC_DIR'], os.getpid(), v.ValueClass.__name__)")


def launched(tmp_path, *command, **env) -> subprocess.CompletedProcess:
    environment = {name: value for name, value in os.environ.items() if name != process_files.ENVIRONMENT_VARIABLE}
    environment.update(OMNIUM_METRICS_DIR=str(tmp_path), **env)
    return subprocess.run([sys.executable, "-m", "omnium.metrics.launch", *command], env=environment,
                          capture_output=True, text=True, timeout=60)


def test_the_launcher_gives_the_command_its_own_empty_directory_named_after_its_process(tmp_path):
    dead_group = tmp_path / "worker-999999999"
    dead_group.mkdir()
    (dead_group / "counter_999999999.db").write_bytes(b"old totals")

    run = launched(tmp_path, "worker", sys.executable, "-c", SHOW_DIRECTORY_AND_PID)

    assert run.returncode == 0, run.stderr
    directory, pid, value_class = run.stdout.split()
    assert directory == str(tmp_path / f"worker-{pid}")  # exec kept the launcher's process id
    assert value_class == "MmapedValue"  # the library chose multiprocess mode at its import
    assert not dead_group.exists()


def test_the_launcher_keeps_a_directory_its_own_launcher_chose(tmp_path):
    chosen = tmp_path / "chosen"
    run = launched(tmp_path, "worker", sys.executable, "-c", SHOW_DIRECTORY_AND_PID,
                   PROMETHEUS_MULTIPROC_DIR=str(chosen))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[0] == str(chosen)


def test_the_launcher_says_how_it_is_used(tmp_path):
    run = launched(tmp_path, "worker")
    assert run.returncode != 0
    assert "usage: python -m omnium.metrics.launch <kind> <command>" in run.stderr


def test_a_directory_chosen_after_the_library_loaded_is_refused(monkeypatch, tmp_path, settings):
    settings.OMNIUM = {**settings.OMNIUM, "METRICS_DIR": str(tmp_path)}
    monkeypatch.delenv(process_files.ENVIRONMENT_VARIABLE, raising=False)
    with pytest.raises(RuntimeError, match="after prometheus_client was imported"):
        process_files.use_group_directory("api")
    assert list(tmp_path.iterdir()) == []


def test_a_worker_started_without_the_launcher_says_its_counts_are_invisible(monkeypatch, caplog):
    monkeypatch.delenv(process_files.ENVIRONMENT_VARIABLE, raising=False)
    process_files.warn_unless_counted("this worker")
    assert "invisible to /metrics" in caplog.text and "omnium.metrics.launch" in caplog.text
