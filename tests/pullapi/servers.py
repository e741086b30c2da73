"""Real pull API server processes (granian, as in production) and a Redis of our own."""

import shutil
import tempfile

from omnium import localrun
from omnium.pullapi.serving import free_port, start_api, wait_for_port
from tests.processes import LOG_DIR, test_environment


class ApiServer:
    def __init__(self, name: str, **env):
        self.port = free_port()
        self.process = start_api(self.port, name, test_environment(**env), LOG_DIR)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.stop()


class PrivateRedis:
    """A redis-server on a free port that a test may stop (never the machine's own Redis)."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="pull-redis-")
        self.process = localrun.LocalProcess(
            [shutil.which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir], f"pull-redis-{self.port}", log_dir=LOG_DIR)
        wait_for_port(self.port, self.process)
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def stop(self):
        self.process.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
