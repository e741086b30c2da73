"""Running processes on this machine: Omnium's own (Celery workers, beat, API servers) and the
loopback servers, for the demo, the benchmarks and the tests.

Each process runs in its own process group with its output in a log file, so that stopping
it (or killing it, as a crash would) takes its children too, and nothing is left running.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from devtools.waiting import wait_until
from omnium.pullapi.serving import granian_command
from omnium.routing import DELIVERY_CONTROL_QUEUE

ROOT = Path(__file__).resolve().parent.parent
CELERY = [sys.executable, "-m", "celery", "-A", "omnium"]
# A worker counts into files that /metrics reads (omnium/metrics/process_files.py).
COUNTED_WORKER = [sys.executable, "-m", "omnium.metrics.launch", "worker", *CELERY, "worker"]
LOOPBACK = "127.0.0.1"


class ManagedProcess:
    """A process in its own group, its output appended to `<log_dir>/<name>.log`."""

    def __init__(self, args: list[str], name: str, env: dict | None = None, log_dir: Path | None = None,
                 cwd: Path = ROOT):
        self.name = name
        self.log_path = (log_dir or ROOT / "var" / "logs") / f"{name}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(self.log_path, "ab")  # noqa: SIM115 (open while the process runs; closed by stop())
        self.start_marker = f"--- start {name} {time.time_ns()}\n"
        self.log.write(self.start_marker.encode())
        self.log.flush()
        self.popen = subprocess.Popen(args, cwd=cwd, env=env or dict(os.environ), stdout=self.log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output_since_start(self) -> str:
        text = self.log_path.read_text(errors="replace")
        return text[text.rfind(self.start_marker):]

    def log_tail(self) -> str:
        return self.output_since_start()[-3000:]

    def wait_until(self, ready, timeout: float = 30.0, what: str = "ready") -> None:
        """Poll `ready()` until true; fail at once, with the log, if the process exits."""
        def ready_or_dead():
            if not self.running():
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode}:\n{self.log_tail()}")
            return ready()

        try:
            wait_until(ready_or_dead, timeout, 0.05, f"{self.name} {what} (log: {self.log_path})", TimeoutError)
        except TimeoutError:
            # Never handed to the caller, so nobody else would stop it: a bench's delivery
            # worker that never got to consume its queues went on running after the bench.
            self.stop()
            raise

    def wait_for_output(self, text: str, timeout: float = 30.0) -> None:
        self.wait_until(lambda: text in self.output_since_start(), timeout, f"printing {text!r}")

    def wait_for_port(self, port: int, timeout: float = 30.0) -> None:
        self.wait_until(lambda: _answers(port), timeout, f"listening on {port}")

    def running(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crash would."""
        if self.running():
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()

    def stop(self, timeout: float = 15.0, *, main_only: bool = False) -> None:
        """SIGTERM, then SIGKILL after ``timeout``. ``main_only``: as systemd's KillMode=mixed
        does, SIGTERM to the main process alone (a Celery worker then stops its pool's children
        warmly), and SIGKILL afterwards to whatever of the group is left."""
        if self.running():
            if main_only:
                os.kill(self.popen.pid, signal.SIGTERM)
            else:
                os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if main_only:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)  # children left behind, if any
            except ProcessLookupError:
                pass
        self.log.close()


def _answers(port: int) -> bool:
    socket.create_connection((LOOPBACK, port), timeout=0.2).close()
    return True


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    # Held open together so the kernel cannot hand out the same port twice.
    probes = [socket.socket() for _ in range(count)]
    try:
        for probe in probes:
            probe.bind((LOOPBACK, 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def start_worker(queues: list[str], name: str, concurrency: int = 2, env=None, log_dir=None,
                 pool: str = "prefork", launcher: tuple[str, ...] = (), timeout: float = 30.0) -> ManagedProcess:
    """`launcher`: a command that runs the worker, e.g. `ip netns exec <namespace>`."""
    process = ManagedProcess(
        [*launcher, *COUNTED_WORKER, "-Q", ",".join(queues), "-c", str(concurrency), "-n", f"{name}@%h",
         "-P", pool, "--without-gossip", "--without-mingle", "-l", "INFO"],
        name, env, log_dir,
    )
    process.wait_for_output(" ready.", timeout)
    return process


def start_beat(name: str = "beat", env=None, log_dir=None) -> ManagedProcess:
    schedule = (log_dir or ROOT / "var" / "logs") / f"{name}-schedule"
    return ManagedProcess([*CELERY, "beat", "-s", str(schedule), "-l", "INFO"], name, env, log_dir)


def start_delivery_worker(name: str, concurrency: int = 32, env=None, log_dir=None,
                          launcher: tuple[str, ...] = (), timeout: float = 30.0) -> ManagedProcess:
    """A worker that sends for every destination: threads, since sends wait on the network.
    Returns once it consumes every destination's queue (`timeout`: thousands take longer)."""
    process = start_worker([DELIVERY_CONTROL_QUEUE], name, concurrency, env, log_dir, pool="threads",
                           launcher=launcher, timeout=timeout)
    process.wait_for_output("delivery worker: consuming", timeout)
    return process


def start_api(port: int, name: str, env: dict, log_dir=None, **options) -> ManagedProcess:
    """A pull API server process (granian, as in production), answering once this returns."""
    process = ManagedProcess(granian_command(port, **options), name, env, log_dir)
    process.wait_for_port(port)
    return process


def stop_all(processes) -> None:
    for process in reversed(list(processes)):
        process.stop()
