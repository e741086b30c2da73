"""Real pull API server processes (granian, as in production) and a Redis of our own."""

from collections import Counter

import redis

from devtools import private_redis
from devtools.processes import free_port, start_api
from tests.child_processes import LOG_DIR, child_environment


class ApiServer:
    def __init__(self, name: str, **env):
        self.port = free_port()
        self.process = start_api(self.port, name, child_environment(**env), LOG_DIR)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.stop()


NOT_PER_REQUEST = ("info", "hello", "client|setinfo", "ping", "incrby", "expire")


class PrivateRedis(private_redis.PrivateRedis):
    """A redis-server on a free port that a test may stop, restart empty or reconfigure (never
    the machine's own Redis), and that counts the commands it served."""

    def __init__(self):
        super().__init__("pull-redis", log_dir=LOG_DIR)

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def commands_run(self) -> Counter:
        """Commands served so far by name, apart from those never made per request: the INFO
        that asks (and its connection's handshake), the invalidation channel's keep-alive PINGs
        and the throttle's shared counts (INCRBY and EXPIRE, at most every 0.25 s per process)."""
        stats = self.client().info("commandstats")
        return Counter({name.removeprefix("cmdstat_"): entry["calls"] for name, entry in stats.items()
                        if name.removeprefix("cmdstat_") not in NOT_PER_REQUEST})
