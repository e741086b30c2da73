"""A RabbitMQ cluster of three nodes on loopback, for the tests, the benchmarks and (on request)
the demo: each node a rabbitmq-server of our own (own node name, ports and data folder), never
the machine's broker, which the other tests use.

The nodes find each other through RabbitMQ's classic peer discovery (the node list in each
one's rabbitmq.conf). The first starts alone and the other two join it: started together, two
nodes that see no peer yet may each form a cluster of one. Partitions are handled by pausing
the minority (`pause_minority`), the setting RabbitMQ recommends for three nodes: a node cut off
from the other two closes its clients' connections, and they move to the majority.

`stop()` stops every node and deletes the folder: nothing is left running or on disk.
"""

import os
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import requests

from devtools.broker import cluster_nodes, vhost_listing
from devtools.processes import ManagedProcess, free_ports
from devtools.waiting import wait_until

# Debian's /usr/sbin/rabbitmq-server switches to the rabbitmq user, who cannot write our
# folders; the script it calls runs the node as whoever starts it.
SERVER_SCRIPTS = ("/usr/lib/rabbitmq/bin/rabbitmq-server", shutil.which("rabbitmq-server") or "rabbitmq-server")
CTL_SCRIPTS = ("/usr/lib/rabbitmq/bin/rabbitmqctl", shutil.which("rabbitmqctl") or "rabbitmqctl")
PARTITION_COOKIE = "omnium-partitioned"  # a cookie no peer has: a node given it is cut off
START_TIMEOUT_S = 90  # a node boots in 7 s on an idle 2-core machine, much later under a test run's load
# How soon a node sees that a peer has gone silent: Erlang's default of 60 s (45-75 s) is a
# long partition; 8 s makes one that a test can wait out.
NET_TICKTIME_S = 8
# A node whose boot fails is started again, as the Debian unit's Restart=on-failure would:
# RabbitMQ 3.10 nodes booting together after a whole-cluster loss now and then fail to sync
# their feature flags with a peer that is itself mid-boot ({incompatible_feature_flags,
# {badrpc, {badmap, undefined}}}), and the next boot joins. More than this many is a real fault.
BOOT_RESTARTS = 3


def _server_script() -> str:
    return next(script for script in SERVER_SCRIPTS if Path(script).exists())


def _rabbitmqctl() -> str:
    return next(script for script in CTL_SCRIPTS if Path(script).exists())


class BrokerNode:
    """One node: its name, its three ports, its folder; started, killed and started again."""

    def __init__(self, cluster: "BrokerCluster", number: int, ports: tuple[int, int, int]):
        self.cluster, self.number = cluster, number
        self.amqp_port, self.dist_port, self.management_port = ports
        self.name = f"{cluster.name}-{number}@localhost"
        self.dir = cluster.dir / str(number)
        (self.dir / "data").mkdir(parents=True)
        (self.dir / "log").mkdir()
        self.process: ManagedProcess | None = None
        self.failed_boots = 0  # since the last start(): boots that failed and were started again

    def url(self, vhost: str = "/") -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/{vhost.lstrip('/')}"

    @property
    def management_url(self) -> str:
        return f"http://guest:guest@127.0.0.1:{self.management_port}/api/"

    def write_config(self, peers: list[str]) -> None:
        lines = [
            f"listeners.tcp.1 = 127.0.0.1:{self.amqp_port}",
            "management.tcp.ip = 127.0.0.1",
            f"management.tcp.port = {self.management_port}",
            "loopback_users = none",
            "cluster_partition_handling = pause_minority",
            "cluster_formation.peer_discovery_backend = classic_config",
            *(f"cluster_formation.classic_config.nodes.{n} = {peer}" for n, peer in enumerate(peers, 1)),
        ]
        (self.dir / "rabbitmq.conf").write_text("\n".join(lines) + "\n")
        (self.dir / "enabled_plugins").write_text("[rabbitmq_management].\n")

    def start(self) -> None:
        """Start the node (its data kept from an earlier run, so a killed node rejoins)."""
        self.failed_boots = 0
        self._launch()

    def _launch(self) -> None:
        if self.process is not None:
            self.process.stop()  # gone already (killed, or its boot failed): closes its log
        self.process = ManagedProcess([_server_script()], self.name.split("@")[0], env=self._environment(),
                                      log_dir=self.cluster.log_dir, cwd=self.dir)

    def wait_until_running(self) -> None:
        """Wait until the node answers, starting it again if its boot fails (see BOOT_RESTARTS)."""
        while True:
            try:
                return self.process.wait_until(self.answers, START_TIMEOUT_S, "answering on its management API")
            except RuntimeError:  # it exited before it answered
                if self.running():
                    raise
                self.restart_if_boot_failed()

    def restart_if_boot_failed(self) -> None:
        """Start the node again if its process has exited, as its supervisor would; raise,
        with the log, after BOOT_RESTARTS failed boots in a row."""
        if self.process is None or self.running():
            return
        if self.failed_boots >= BOOT_RESTARTS:
            raise RuntimeError(f"{self.name} failed to boot {self.failed_boots + 1} time(s) in a row:\n"
                               f"{self.process.log_tail()}")
        self.failed_boots += 1
        self._launch()

    def answers(self) -> bool:
        try:
            return requests.get(f"http://127.0.0.1:{self.management_port}/api/overview", auth=("guest", "guest"),
                                timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def beam_pid(self) -> int:
        """The Erlang VM's process id (the node's own pid file), for its CPU time."""
        return int((self.dir / "pid").read_text().strip())

    def kill(self) -> None:
        """SIGKILL the node, as a crashed host would: no goodbye to its peers or clients."""
        self.process.kill()

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def cut_off(self) -> None:
        """A partition: the node loses its peers while its clients stay connected. It takes
        another Erlang cookie, so that every handshake with its peers fails, and drops its
        links to them; pause_minority then has it close its clients' connections."""
        self._evaluate(f"erlang:set_cookie(node(), '{PARTITION_COOKIE}'), "
                       "[erlang:disconnect_node(Peer) || Peer <- nodes()], ok.", cookie=self.cluster.cookie)

    def heal(self) -> None:
        """The partition's end: the cluster's cookie again; the node finds its peers and rejoins."""
        self._evaluate(f"erlang:set_cookie(node(), '{self.cluster.cookie}'), ok.", cookie=PARTITION_COOKIE)

    def _evaluate(self, expression: str, cookie: str) -> None:
        subprocess.run([_rabbitmqctl(), "-n", self.name, "--erlang-cookie", cookie, "eval", expression],
                       env=self._environment(), check=True, capture_output=True, timeout=60)

    def _environment(self) -> dict:
        base = self.dir
        return {
            **os.environ,
            "HOME": str(self.cluster.dir),  # its .erlang.cookie: the cluster's own secret
            "RABBITMQ_NODENAME": self.name,
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(base / "data"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_PID_FILE": str(base / "pid"),
            "RABBITMQ_CONF_ENV_FILE": os.devnull,  # not the machine broker's rabbitmq-env.conf
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": f"-kernel net_ticktime {NET_TICKTIME_S}",
            "ERL_EPMD_ADDRESS": "127.0.0.1",
        }


class BrokerCluster:
    """Three clustered nodes; `urls()` is the failover list every Omnium process is given."""

    def __init__(self, name: str = "omnium-broker", size: int = 3, log_dir: Path | None = None):
        self.name, self.log_dir = name, log_dir
        # Restarts, kills and starts one at a time: a restart on a timer (bench/gameday_faults)
        # that ran into the whole broker's kill started a node the kill never saw, and the
        # next start of that node found its distribution port taken.
        self._changing = threading.RLock()
        self.dir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
        self.cookie = secrets.token_hex(20)
        cookie = self.dir / ".erlang.cookie"
        cookie.write_text(self.cookie)
        cookie.chmod(0o400)
        ports = free_ports(3 * size)
        self.nodes = [BrokerNode(self, n, tuple(ports[3 * (n - 1):3 * n])) for n in range(1, size + 1)]
        for node in self.nodes:
            node.write_config([peer.name for peer in self.nodes])
        try:
            self._start_all()
        except BaseException:
            self.stop()
            raise

    def _start_all(self) -> None:
        first, *others = self.nodes
        first.start()
        first.wait_until_running()
        for node in others:
            node.start()
        for node in others:
            node.wait_until_running()
        self.wait_until_clustered()

    def urls(self, vhost: str = "/") -> str:
        """Every node's URL, `;`-separated: the form of Celery's and kombu's failover list."""
        return ";".join(node.url(vhost) for node in self.nodes)

    def management_url(self) -> str:
        """The management API of the first node that answers (any node shows the whole cluster)."""
        node = wait_until(lambda: next((n for n in self.nodes if n.running() and n.answers()), None), 30,
                          message="a node answering on its management API")
        return node.management_url

    def running_nodes(self) -> set[str]:
        """Node names the cluster lists as running."""
        return {node["name"] for node in cluster_nodes(self.management_url()) if node.get("running")}

    def wait_until_clustered(self, timeout: float = START_TIMEOUT_S) -> None:
        """Every running node listed as running by the cluster."""
        def clustered():
            try:
                return self.running_nodes() >= {node.name for node in self.nodes if node.running()}
            except (requests.RequestException, RuntimeError):
                return False
        wait_until(clustered, timeout, 0.5, "every started node running in one cluster", TimeoutError)

    def node_with_most_queues(self, vhost_url: str) -> BrokerNode:
        """The node where most of the queues of `vhost_url`'s vhost live (their leader, for
        replicated ones): the one whose loss moves the most work."""
        counts = {node.name: 0 for node in self.nodes}
        for queue in vhost_listing(self.management_url(), vhost_url, "queues"):
            if queue.get("node") in counts:
                counts[queue["node"]] += 1
        return next(node for node in self.nodes if node.name == max(counts, key=counts.get))

    def kill_all(self) -> None:
        """Every node killed (SIGKILL), as a whole broker lost at once."""
        with self._changing:
            for node in self.nodes:
                node.kill()

    def start_after_outage(self) -> float:
        """Start every node again; returns the moment (epoch seconds) the broker was back for
        its clients, after waiting for every node. Back means a majority of the nodes running
        together: a node that boots before its peers finds itself in a minority and pauses
        (pause_minority), closing whatever connected to it."""
        with self._changing:
            return self._start_all_after_outage()

    def _start_all_after_outage(self) -> float:
        for node in self.nodes:
            node.start()

        def majority_running() -> bool:
            for node in self.nodes:
                node.restart_if_boot_failed()
                try:
                    listed = cluster_nodes(node.management_url) if node.answers() else []
                except (requests.RequestException, RuntimeError):
                    continue
                if sum(1 for peer in listed if peer.get("running")) > len(self.nodes) // 2:
                    return True
            return False

        wait_until(majority_running, START_TIMEOUT_S, 0.1, "a majority of the nodes running after the outage",
                   TimeoutError)
        back_at = time.time()
        for node in self.nodes:
            node.wait_until_running()
        self.wait_until_clustered()
        return back_at

    def restart(self, node: BrokerNode) -> None:
        with self._changing:
            node.start()
            node.wait_until_running()
            self.wait_until_clustered()

    def stop(self) -> None:
        """Kill every node and delete the cluster's folder (its data goes with it: a graceful
        stop, 6 s a node, would save nothing anyone reads)."""
        for node in self.nodes:
            if node.process is not None:
                node.kill()
                node.process.stop()  # closes its log
        shutil.rmtree(self.dir, ignore_errors=True)
