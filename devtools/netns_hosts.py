"""Worker hosts for real, on this machine: each a Linux network namespace with its own build
and delivery workers, reaching PostgreSQL, RabbitMQ, Redis and the loopback receivers only
through its veth pair, so that a host can be cut off (`ip link set <veth> down`) as a
network partition would.

    host side (this machine)                         namespace omnium-<tag>-h<n>
    127.0.0.1:5432/5672/6379/receivers               127.0.0.1:<same ports>  ← workers
           ▲ tcp_forwarder                                  │ tcp_forwarder
    10.251.0.<4n+1>  ◄──────────── veth pair ──────────── 10.251.0.<4n+2>

The addresses are in 10.251.0.0/24, a private range that exists only inside this machine:
made here, routed only between the two ends of each veth, and removed with the namespaces
(always, also when a start fails). Needs root (`ip netns`). As a command:

    python -m devtools.netns_hosts up --hosts 2 [--forward PORT,...]   # until Ctrl-C
    python -m devtools.netns_hosts clean                               # leftovers of a killed run
"""

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from devtools import tcp_forwarder
from devtools.processes import ROOT, ManagedProcess, start_delivery_worker, start_worker, stop_all
from omnium.routing import BULK_QUEUES, LIVE_QUEUES

SUBNET = "10.251.0"
NAMESPACE_PREFIX = "omnium-"
VETH_PREFIX = "omh"
# What workers need: PostgreSQL, RabbitMQ, Redis.
SERVICE_PORTS = (5432, 5672, 6379)


def _port_of(url: str) -> int | None:
    """The port of a URL's server (a test run's own Redis may listen on another port)."""
    return urlsplit(url).port


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


@dataclass
class WorkerHost:
    """One namespace, its veth pair, its forwarders and its workers."""

    number: int
    tag: str
    processes: list[ManagedProcess] = field(default_factory=list)
    is_cut: bool = False

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.tag}-h{self.number}"

    @property
    def name(self) -> str:
        return f"h{self.number}"

    @property
    def host_veth(self) -> str:  # interface names: at most 15 characters
        return f"{VETH_PREFIX}{self.tag}{self.number}h"

    @property
    def inner_veth(self) -> str:
        return f"{VETH_PREFIX}{self.tag}{self.number}n"

    @property
    def host_address(self) -> str:
        return f"{SUBNET}.{4 * self.number + 1}"

    @property
    def inner_address(self) -> str:
        return f"{SUBNET}.{4 * self.number + 2}"

    @property
    def delivery_worker(self) -> str:
        """The delivery worker's node name prefix (attempts record `<this>@<hostname>`)."""
        return f"deliver-{self.tag}-{self.name}"

    def make_network(self) -> None:
        holder = ip("-o", "addr", "show", "to", f"{self.host_address}/32").stdout.split()
        if holder:  # a second veth with this address would take the route, and every connection time out
            raise RuntimeError(f"{self.host_address} is already on {holder[1]}: another run's worker hosts are up "
                               "(`python -m devtools.netns_hosts clean` removes a killed run's)")
        ip("netns", "add", self.namespace)
        ip("link", "add", self.host_veth, "type", "veth", "peer", "name", self.inner_veth)
        ip("link", "set", self.inner_veth, "netns", self.namespace)
        ip("addr", "add", f"{self.host_address}/30", "dev", self.host_veth)
        ip("link", "set", self.host_veth, "up")
        self.inside("addr", "add", f"{self.inner_address}/30", "dev", self.inner_veth)
        self.inside("link", "set", self.inner_veth, "up")
        self.inside("link", "set", "lo", "up")

    def inside(self, *args: str) -> None:
        ip("-n", self.namespace, *args)

    @property
    def launcher(self) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.namespace)

    def start_forwarders(self, ports: list[int], env: dict, log_dir: Path) -> None:
        outside = ManagedProcess(tcp_forwarder.command(self.host_address, "127.0.0.1", ports),
                                 f"forward-{self.tag}-{self.name}-out", env, log_dir)
        self.processes.append(outside)
        outside.wait_for_output(tcp_forwarder.READY)
        inside = ManagedProcess([*self.launcher, *tcp_forwarder.command("127.0.0.1", self.host_address, ports)],
                                f"forward-{self.tag}-{self.name}-in", env, log_dir)
        self.processes.append(inside)
        inside.wait_for_output(tcp_forwarder.READY)

    def start_workers(self, env: dict, log_dir: Path, delivery_threads: int) -> None:
        self.processes.append(start_worker(LIVE_QUEUES + BULK_QUEUES, f"build-{self.tag}-{self.name}", 2, env,
                                           log_dir, launcher=self.launcher))
        self.processes.append(start_delivery_worker(self.delivery_worker, delivery_threads, env, log_dir,
                                                    launcher=self.launcher))

    def cut(self) -> None:
        """A network partition: nothing crosses the veth from now on; the processes live on."""
        ip("link", "set", self.host_veth, "down")
        self.is_cut = True

    def remove(self) -> None:
        if self.is_cut:  # its workers cannot finish what they hold: a graceful stop would wait 15 s each
            for process in self.processes:
                process.kill()
        stop_all(self.processes)
        ip("netns", "del", self.namespace, check=False)  # takes the inner veth, and with it its peer
        ip("link", "del", self.host_veth, check=False)


class WorkerHosts:
    """`count` worker hosts, made and started on entry, stopped and removed on exit (always)."""

    def __init__(self, count: int, env: dict, log_dir: Path, forward_ports=(), delivery_threads: int = 32):
        self.tag = f"{os.getpid() % 10000:04d}"
        self.hosts = [WorkerHost(number, self.tag) for number in range(1, count + 1)]
        self.env, self.log_dir, self.delivery_threads = env, log_dir, delivery_threads
        self.ports = sorted({*SERVICE_PORTS, _port_of(env.get("REDIS_URL", "")), *forward_ports} - {None})

    def __enter__(self) -> "WorkerHosts":
        remove_abandoned()
        try:
            for host in self.hosts:
                host.make_network()
                host.start_forwarders(self.ports, self.env, self.log_dir)
            # Side by side: each worker takes seconds to start, mostly waiting.
            with ThreadPoolExecutor(len(self.hosts)) as starting:
                list(starting.map(lambda host: host.start_workers(self.env, self.log_dir, self.delivery_threads),
                                  self.hosts))
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def remove(self) -> None:
        for host in self.hosts:
            host.remove()


def leftovers() -> tuple[list[str], list[str]]:
    """Namespaces and host-side veths of runs that were killed before they could clean up."""
    namespaces = [line.split()[0] for line in ip("netns", "list").stdout.splitlines()
                  if line.startswith(NAMESPACE_PREFIX)]
    links = [line.split(":")[1].strip().split("@")[0] for line in ip("-o", "link", "show").stdout.splitlines()
             if line.split(":")[1].strip().startswith(VETH_PREFIX)]
    return namespaces, links


def remove_abandoned() -> None:
    """Removes the namespaces of killed runs: those in which no process runs any more (a live
    run's hold its forwarders and workers), and their veth pairs at once (the kernel would take
    them with the namespace, but later)."""
    for namespace in leftovers()[0]:
        if not ip("netns", "pids", namespace).stdout.strip():
            tag, _, number = namespace.removeprefix(NAMESPACE_PREFIX).partition("-h")
            WorkerHost(int(number), tag).remove()


def clean() -> None:
    namespaces, links = leftovers()
    for namespace in namespaces:
        ip("netns", "del", namespace, check=False)
    for link in links:
        ip("link", "del", link, check=False)
    print(f"removed namespaces {namespaces or 'none'}, veths {links or 'none'}")


def _interrupt(*_) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m devtools.netns_hosts", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start worker hosts until Ctrl-C (against DATABASE_URL, "
                                        "CELERY_BROKER_URL, REDIS_URL of this environment)")
    up.add_argument("--hosts", type=int, default=2)
    up.add_argument("--forward", default="", help="more ports to reach from inside (loopback receivers)")
    commands.add_parser("clean", help="remove namespaces and veths left by a killed run")
    args = parser.parse_args(argv)
    if args.command == "clean":
        return clean()
    extra = [int(port) for port in args.forward.split(",") if port]
    with WorkerHosts(args.hosts, dict(os.environ), ROOT / "var" / "logs", extra) as hosts:
        for host in hosts.hosts:
            print(f"{host.namespace}: {host.inner_address} via {host.host_veth} ({host.host_address}), "
                  f"workers build-{host.tag}-{host.name}, {host.delivery_worker}", flush=True)
        signal.signal(signal.SIGTERM, _interrupt)  # `kill` cleans up as Ctrl-C does
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1:])
