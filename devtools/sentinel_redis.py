"""A pull cache Redis that can lose its primary: one primary, one replica and three Sentinels
on loopback, each a redis-server of our own (Debian's redis-server; ``--sentinel`` makes it a
Sentinel, which is all the redis-sentinel package adds)."""

import shutil
from pathlib import Path

import redis

from devtools.private_redis import PrivateRedis
from devtools.processes import ManagedProcess, free_port
from devtools.waiting import wait_until

SERVICE = "omnium-pull"
# Quick enough for a test: a primary silent for 1 s is down, and a failover that stalls is
# tried again after 5 s.
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000


class SentinelRedis:
    def __init__(self, name: str, log_dir: Path | None = None):
        self.name, self.log_dir = name, log_dir
        self.nodes = [PrivateRedis(f"{name}-node-1", log_dir)]
        self.nodes.append(PrivateRedis(f"{name}-node-2", log_dir,
                                       more_arguments=("--replicaof", "127.0.0.1", str(self.nodes[0].port))))
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.sentinels = [self._start_sentinel(n, port) for n, port in enumerate(self.sentinel_ports, 1)]
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)
        self.url = f"redis+sentinel://{hosts}/{SERVICE}/0"
        self.wait_until(lambda: self._replica_in_sync() and self._every_sentinel_sees_the_replica(),
                        "the replica in sync and known to every Sentinel")

    def _start_sentinel(self, number: int, port: int) -> ManagedProcess:
        # A Sentinel rewrites its configuration file as it learns: each gets a file of its own.
        config = Path(self.nodes[0].dir) / f"sentinel-{number}.conf"
        config.write_text(
            f"port {port}\nbind 127.0.0.1\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.nodes[0].port} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n")
        process = ManagedProcess([shutil.which("redis-server"), str(config), "--sentinel"],
                                 f"{self.name}-sentinel-{number}", log_dir=self.log_dir)
        process.wait_for_port(port)
        return process

    def sentinel(self, number: int = 0) -> redis.Redis:
        return redis.Redis("127.0.0.1", self.sentinel_ports[number], socket_timeout=1, decode_responses=True)

    def primary_port(self) -> int:
        """The primary's port as the Sentinels name it now."""
        return int(self.sentinel().sentinel_get_master_addr_by_name(SERVICE)[1])

    def node_on(self, port: int) -> PrivateRedis:
        return next(node for node in self.nodes if node.port == port)

    def kill_primary(self) -> int:
        """SIGKILL the primary, as a crashed host would; returns its port."""
        port = self.primary_port()
        self.node_on(port).process.kill()
        return port

    def wait_for_failover(self, old_port: int, timeout: float = 30.0) -> int:
        """The new primary's port, once every Sentinel names it."""
        def moved():
            return all(int(self.sentinel(n).sentinel_get_master_addr_by_name(SERVICE)[1]) != old_port
                       for n in range(len(self.sentinels)))
        self.wait_until(moved, "the Sentinels to name a new primary", timeout)
        return self.primary_port()

    def wait_until(self, condition, what: str, timeout: float = 30.0) -> None:
        """Poll ``condition``; a node or Sentinel that does not answer yet counts as "not yet"."""
        def answered():
            try:
                return condition()
            except redis.RedisError:
                return False

        wait_until(answered, timeout, message=what, failure=TimeoutError)

    def _replica_in_sync(self) -> bool:
        info = redis.Redis("127.0.0.1", self.nodes[1].port).info("replication")
        return info.get("master_link_status") == "up"

    def _every_sentinel_sees_the_replica(self) -> bool:
        return all(len(self.sentinel(n).sentinel_slaves(SERVICE)) == 1 and
                   self.sentinel(n).sentinel_master(SERVICE)["num-other-sentinels"] == 2
                   for n in range(len(self.sentinels)))

    def stop(self) -> None:
        for process in self.sentinels:
            process.stop()
        for node in self.nodes:
            node.stop()
