"""Real pull API server processes (granian, as in production) and a Redis of our own."""

import shutil
import tempfile
import time
from collections import Counter

import redis

from devtools.processes import ManagedProcess, free_port, start_api
from tests.child_processes import LOG_DIR, child_environment


class ApiServer:
    def __init__(self, name: str, **env):
        self.port = free_port()
        self.process = start_api(self.port, name, child_environment(**env), LOG_DIR)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.stop()


NOT_PER_REQUEST = ("info", "hello", "client|setinfo", "ping", "incrby", "expire")


class PrivateRedis:
    """A redis-server on a free port that a test may stop, restart empty or reconfigure (never
    the machine's own Redis)."""

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

    def restart(self):
        """Stopped and started again on the same port, empty (as a Redis without persistence)."""
        self.restart_after(0)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def commands_run(self) -> Counter:
        """Commands served so far by name, apart from those never made per request: the INFO
        that asks (and its connection's handshake), the invalidation channel's keep-alive PINGs
        and the throttle's shared counts (INCRBY and EXPIRE, at most every 0.25 s per process)."""
        stats = self.client().info("commandstats")
        return Counter({name.removeprefix("cmdstat_"): entry["calls"] for name, entry in stats.items()
                        if name.removeprefix("cmdstat_") not in NOT_PER_REQUEST})

    def stop(self):
        self.process.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
