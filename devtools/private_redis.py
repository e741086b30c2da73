"""A redis-server of our own on a free port, which a benchmark may restart or stop (never the
machine's Redis: other tests and the demo use it)."""

import shutil
import tempfile
import time
from pathlib import Path

from devtools.processes import ManagedProcess, free_port


class PrivateRedis:
    """Without persistence: a restart loses every key, the harshest kind of Redis restart
    (Omnium keeps only hints and caches there, ARCHITECTURE rule 1)."""

    def __init__(self, name: str, log_dir: Path | None = None, *, more_arguments: tuple[str, ...] = ()):
        self.name, self.log_dir, self.more_arguments = name, log_dir, more_arguments
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix=f"{name}-")
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = self._start()

    def _start(self) -> ManagedProcess:
        process = ManagedProcess(
            [shutil.which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, *self.more_arguments], self.name, log_dir=self.log_dir)
        process.wait_for_port(self.port)
        return process

    def restart(self) -> None:
        """Stop it, then start it again on the same port, empty."""
        self.restart_after(0)

    def restart_after(self, seconds: float, during=lambda: None) -> None:
        """Stop it, call `during()`, start it again (empty) `seconds` after it stopped."""
        self.process.stop()
        stopped_at = time.monotonic()
        during()
        time.sleep(max(0.0, seconds - (time.monotonic() - stopped_at)))
        self.process = self._start()

    def stop(self) -> None:
        self.process.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
