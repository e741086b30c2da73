"""Running Omnium's processes on this machine: for the demo, the benchmarks and the tests.

Each process runs in its own process group with its output in a log file, so that stopping
it (or killing it, as a crash would) takes its children too, and nothing is left running.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELERY = [sys.executable, "-m", "celery", "-A", "omnium"]


class LocalProcess:
    def __init__(self, args: list[str], name: str, env: dict | None = None, log_dir: Path | None = None):
        self.name = name
        self.log_path = (log_dir or ROOT / "var" / "logs") / f"{name}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(self.log_path, "ab")
        self.start_marker = f"--- start {name} {time.time_ns()}\n"
        self.log.write(self.start_marker.encode())
        self.log.flush()
        self.popen = subprocess.Popen(args, cwd=ROOT, env=env or dict(os.environ), stdout=self.log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def output_since_start(self) -> str:
        text = self.log_path.read_text(errors="replace")
        return text[text.rfind(self.start_marker):]

    def wait_for_output(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output_since_start():
                return
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode}; see {self.log_path}")
            time.sleep(0.1)
        raise TimeoutError(f"{text!r} not seen from {self.name} within {timeout} s; see {self.log_path}")

    def running(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crash would."""
        if self.running():
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()

    def stop(self, timeout: float = 15.0) -> None:
        if self.running():
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def start_worker(queues: list[str], name: str, concurrency: int = 2, env=None, log_dir=None,
                 pool: str = "prefork") -> LocalProcess:
    process = LocalProcess(
        [*CELERY, "worker", "-Q", ",".join(queues), "-c", str(concurrency), "-n", f"{name}@%h",
         "-P", pool, "--without-gossip", "--without-mingle", "-l", "INFO"],
        name, env, log_dir,
    )
    process.wait_for_output(" ready.")
    return process


def start_beat(name: str = "beat", env=None, log_dir=None) -> LocalProcess:
    schedule = (log_dir or ROOT / "var" / "logs") / f"{name}-schedule"
    return LocalProcess([*CELERY, "beat", "-s", str(schedule), "-l", "INFO"], name, env, log_dir)


def stop_all(processes) -> None:
    for process in reversed(list(processes)):
        process.stop()


def start_delivery_worker(name: str, concurrency: int = 32, env=None, log_dir=None) -> LocalProcess:
    """A worker that sends for every destination: threads, since sends wait on the network."""
    from omnium.routing import DELIVERY_CONTROL_QUEUE

    process = start_worker([DELIVERY_CONTROL_QUEUE], name, concurrency, env, log_dir, pool="threads")
    process.wait_for_output("delivery worker: consuming")
    return process
