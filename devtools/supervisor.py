"""Restarting the processes of the demo and the benchmarks when they exit, as systemd does in
production (deploy/systemd/: Restart=always).

A supervised process is a name and a way to start it (`start() -> ManagedProcess`, which
returns once the process is ready). A thread polls them; one that exited without being asked
to is started again and counted, and `report` is told ("demo-delivery exited (code -9);
restarted"). `restart()` is the deliberate kind: stop, then start with whatever the start
function reads now (a new credential key ring in the environment, say).
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from devtools.processes import ManagedProcess

POLL_INTERVAL_S = 0.2  # a dead worker is noticed well inside the claim expiry (OMNIUM_CLAIM_TTL_S = 6)


@dataclass
class Supervised:
    name: str
    start: Callable[[], ManagedProcess]
    process: ManagedProcess
    restarts: int = 0
    last_exit_code: int | None = None
    last_restart_at: float | None = None  # time.monotonic() when it was ready again


class Supervisor:
    def __init__(self, report: Callable[[str], None] = print):
        self.report = report
        self.children: dict[str, Supervised] = {}
        self._lock = threading.Lock()  # a poll and a deliberate restart never start the same process twice
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)

    def add(self, name: str, start: Callable[[], ManagedProcess]) -> ManagedProcess:
        """Start `name` now (waiting until it is ready) and keep it running from then on."""
        process = start()
        with self._lock:
            self.children[name] = Supervised(name, start, process)
        if not self._thread.is_alive():
            self._thread.start()
        return process

    def process(self, name: str) -> ManagedProcess:
        return self.children[name].process

    @property
    def restarts(self) -> int:
        """Restarts after unexpected exits (deliberate restarts are not counted)."""
        return sum(child.restarts for child in self.children.values())

    def restart(self, name: str) -> ManagedProcess:
        """Stop `name` gracefully and start it again (a rolling restart, one process at a time)."""
        with self._lock:
            child = self.children[name]
            child.process.stop()
            child.process = child.start()
            return child.process

    def stop(self) -> None:
        """Stop watching, then stop every process, the last added first."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        with self._lock:
            for child in reversed(list(self.children.values())):
                child.process.stop()

    def _watch(self) -> None:
        while not self._stopping.wait(POLL_INTERVAL_S):
            for name in list(self.children):
                with self._lock:
                    if self._stopping.is_set():
                        return
                    self._revive_if_exited(self.children[name])

    def _revive_if_exited(self, child: Supervised) -> None:
        code = child.process.popen.poll()
        if code is None:
            return
        child.process.stop()  # closes its log file
        child.last_exit_code = code
        try:
            child.process = child.start()
        except Exception as exc:  # noqa: BLE001 - a start that fails is tried again at the next poll
            self.report(f"{child.name} exited (code {code}); restart failed: {exc}")
            return
        child.restarts += 1
        child.last_restart_at = time.monotonic()
        self.report(f"{child.name} exited (code {code}); restarted")
