#!/usr/bin/env python
"""Benchmark of a worker host cut off mid-send: two worker hosts as network namespaces
(devtools/netns_hosts.py), each with a build and a delivery worker, sending to webhook
destinations on loopback while results keep changing; one host's veth goes down mid-send.
Prints one JSON object.

  host_failover_s        the cut -> the surviving host's first confirmed send to the last of
                         the destinations the cut host served last
  orphaned_destinations  how many that was
  confirmed_before_cut   sends confirmed per host before the cut (both share the work)
  max_senders_at_once    the most sends in flight for one destination (1: one sender)
  caught_up_s            the last change -> every destination has every newest version

Needs root (`ip netns`). Own PostgreSQL database (omnium_bench_hosts), Redis database 4 and
RabbitMQ vhost. Usage: sudo .venv/bin/python bench/hosts.py [--destinations 12]
"""

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import prepare  # noqa: E402

# Push only: no pull cache destinations competing for the hosts' senders.
os.environ["OMNIUM_PULL_CACHE_AUTOMATIC"] = "false"
prepare("omnium_bench_hosts", redis_db=4)

from django.core.management import call_command  # noqa: E402

from devtools import processes  # noqa: E402
from devtools.generator import Generator, delete_games, games_code  # noqa: E402
from devtools.host_failover import cut_one_host_mid_send  # noqa: E402
from devtools.loopback.hosts import HoldingReceiver  # noqa: E402
from devtools.loopback.receivers import webhook_secret  # noqa: E402
from devtools.netns_hosts import WorkerHosts  # noqa: E402
from devtools.provisioning import provision_destination  # noqa: E402
from omnium.clients.models import Client  # noqa: E402
from omnium.feeds.builder import build_file, files_of  # noqa: E402
from omnium.redis_client import redis_client  # noqa: E402

SEED = 31
LOG_DIR = processes.ROOT / "var" / "bench-logs"
# The lease's claim expiry as in production (OMNIUM_CLAIM_TTL_S, 6 s) sets the failover time.
ENV = {"OMNIUM_SWEEP_INTERVAL_S": "0.5"}


def fresh_games():
    call_command("migrate", verbosity=0)
    delete_games(games_code("small", SEED))
    Client.objects.filter(name="bench-hosts").delete()
    redis_client().flushdb()
    games = Generator("small", SEED).run()
    for key in files_of(games.code):
        build_file(key)
    return games


def destinations(games, receiver: HoldingReceiver, count: int) -> list[int]:
    secret = webhook_secret()
    return [provision_destination("bench-hosts", f"webhook-{n}", ("webhook", {"url": receiver.url(f"d{n}")},
                                                                   {"secret": secret}), games, ("calendar", "results")).pk
            for n in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--destinations", type=int, default=12)
    parser.add_argument("--delivery-threads", type=int, default=16, help="per host")
    args = parser.parse_args()
    games = fresh_games()
    receiver = HoldingReceiver(hold_s=0.2)
    env = {**os.environ, **ENV}
    beat = processes.start_beat("bench-hosts-beat", env, LOG_DIR)
    try:
        ids = destinations(games, receiver, args.destinations)
        with WorkerHosts(2, env, LOG_DIR, forward_ports=[receiver.port], delivery_threads=args.delivery_threads) as hosts:
            run = cut_one_host_mid_send(games, hosts.hosts, ids)
    finally:
        beat.stop()
        receiver.stop()
    print(json.dumps({**asdict(run), "max_senders_at_once": max(receiver.max_in_flight.values()),
                      "destinations": args.destinations}, indent=2))


if __name__ == "__main__":
    main()
