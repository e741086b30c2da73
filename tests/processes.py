"""Real Celery worker and beat processes for tests, pointed at the test database."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
CELERY = [sys.executable, "-m", "celery", "-A", "omnium"]


def test_environment(**overrides) -> dict:
    """The environment of a child process: same settings, but the test database."""
    db = connection.settings_dict
    env = dict(os.environ)
    env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env.update({k: str(v) for k, v in overrides.items()})
    return env


class Process:
    def __init__(self, args: list[str], env: dict, log_name: str):
        self.log_path = ROOT / "var" / "test-logs" / f"{log_name}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(self.log_path, "ab")
        self.popen = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def wait_for_log(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log_path.read_text(errors="replace"):
                return
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.popen.args} exited; see {self.log_path}")
            time.sleep(0.1)
        raise TimeoutError(f"{text!r} not seen in {self.log_path} within {timeout} s")

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crash would."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()

    def stop(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def start_worker(queues: list[str], name: str, concurrency: int = 2, **env_overrides) -> Process:
    # The readiness marker is written fresh per start, so a log from an earlier run cannot fool us.
    marker = f"omnium-test-start-{time.monotonic_ns()}"
    process = Process(
        [*CELERY, "worker", "-Q", ",".join(queues), "-c", str(concurrency), "-n", f"{name}@%h",
         "--without-gossip", "--without-mingle", "-l", "INFO"],
        test_environment(OMNIUM_TEST_MARKER=marker, **env_overrides), name,
    )
    process.log.write(f"--- {marker}\n".encode())
    process.log.flush()
    _wait_ready(process)
    return process


def _wait_ready(process: Process, timeout: float = 30.0) -> None:
    size = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = process.log_path.read_text(errors="replace")
        if text.rfind(" ready.") > text.rfind("--- omnium-test-start"):
            return
        if process.popen.poll() is not None:
            raise RuntimeError(f"worker exited; see {process.log_path}")
        time.sleep(0.1)
    raise TimeoutError(f"worker not ready; see {process.log_path}")


def start_beat(name: str = "beat", **env_overrides) -> Process:
    schedule = ROOT / "var" / "test-logs" / f"{name}-schedule"
    return Process([*CELERY, "beat", "-s", str(schedule), "-l", "INFO"], test_environment(**env_overrides), name)
