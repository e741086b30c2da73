"""Real pull API server processes (granian, as in production) and a Redis of our own."""

import shutil
import tempfile
import time

from devtools.processes import ManagedProcess, free_port, start_api
from tests.child_processes import LOG_DIR, child_environment


class ApiServer:
    def __init__(self, name: str, **env):
        self.port = free_port()
        self.process = start_api(self.port, name, child_environment(**env), LOG_DIR)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.stop()


class PrivateRedis:
    """A redis-server on a free port that a test may stop (never the machine's own Redis)."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="pull-redis-")
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = self._start()

    def _start(self) -> ManagedProcess:
        process = ManagedProcess(
            [shutil.which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir], f"pull-redis-{self.port}", log_dir=LOG_DIR)
        process.wait_for_port(self.port)
        return process

    def restart_after(self, seconds: float, during=lambda: None) -> None:
        """Stop the server, call `during()`, start it again (empty) `seconds` after it stopped."""
        self.process.stop()
        stopped_at = time.monotonic()
        during()
        time.sleep(max(0.0, seconds - (time.monotonic() - stopped_at)))
        self.process = self._start()

    def stop(self):
        self.process.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
