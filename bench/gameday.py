#!/usr/bin/env python
"""Game day: a replayed asian-games day to 32 destinations on loopback receivers, first calm,
then with faults injected on a schedule, all in one run. Prints one JSON object.

Every process runs under devtools.supervisor (systemd's Restart=always in production), with a
Redis of its own (REDIS_URL; restarted during the day) and its own database and RabbitMQ
vhost. The faults, in the faulted phase (seconds after its start):

   10  webhook destination answers 403 for 90 s      15  one SFTP server frozen for 120 s
   20  kill -9 the build worker mid-build            50  kill -9 the delivery worker mid-send
   80  kill -9 the stat worker mid-job              140  Redis restart (every key lost)
  170  PostgreSQL restart                           200  credentials rotated to a new key
  with --broker-cluster (the day runs on a three-node RabbitMQ cluster of its own):
  230  kill -9 the node where most queues live (started again 20 s later)
  260  the whole broker down for 30 s
A fault that takes long to inject (the rotation's rolling restart) moves the later ones back by
as much; with --broker-cluster give the day 7 minutes or more (--minutes 7).

  recovery_s_max       our own faults: fault's end -> every healthy destination has confirmed a
                       version committed after it (the worst destination, the worst fault)
  destination_recovery_s_max   the 403 and the frozen server: fault's end -> that destination's
                       first confirmed send, with the retry pace in force at the fault's end
  versions_lost        after the settle period: files whose current version a healthy
                       destination has not confirmed
  older_after_newer    an older version confirmed (DeliveryAttempt) or accepted by a webhook
                       receiver after a newer one
  files_parked         failed attempts not tried again within 5 min (+30 s)
  age_p95_s / age_p95_calm_s   proof age p95 of the healthy destinations, faulted / calm phase
  pull_stale_max_s     a pull client polling throughout: the longest it was served a version
                       older than the newest committed one
  broker_node_loss_gap_s       the longest a healthy destination went without a confirmed send,
                       from 5 s before the node's kill to 30 s after
  broker_return_catch_up_s     the whole broker's return -> every healthy destination has
                       confirmed a version committed after it (broker_return_first_send_s: the first)

Own PostgreSQL database (omnium_bench_gameday). Restarting PostgreSQL affects everything on
the machine for about 2 s: --skip-postgres-restart leaves it out.
Usage: .venv/bin/python bench/gameday.py [--minutes 8] [--calm-minutes 3] [--speed 100]
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import prepare  # noqa: E402
from devtools.broker_cluster import BrokerCluster  # noqa: E402
from devtools.private_redis import PrivateRedis  # noqa: E402
from devtools.processes import ROOT  # noqa: E402

LOG_DIR = ROOT / "var" / "logs" / "gameday"


def options():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=8.0, help="faulted phase (at least 4: the faults take 3.5)")
    parser.add_argument("--calm-minutes", type=float, default=3.0, help="calm phase, before the faults")
    parser.add_argument("--speed", type=float, default=100.0, help="replay speed (times real time)")
    parser.add_argument("--settle-seconds", type=float, default=180.0,
                        help="after the replay: how long every destination may take to catch up")
    parser.add_argument("--delivery-workers", type=int, default=2,
                        help="two, as in production: one killed, the other carries on")
    parser.add_argument("--skip-postgres-restart", action="store_true")
    parser.add_argument("--broker-cluster", action="store_true",
                        help="run on a three-node RabbitMQ cluster of its own, and add its two faults "
                             "(--minutes at least 6)")
    return parser.parse_args()


def main() -> None:
    args = options()
    redis = PrivateRedis("gameday-redis", LOG_DIR)  # REDIS_URL of every process of the bench
    cluster = BrokerCluster("gameday-broker", log_dir=LOG_DIR) if args.broker_cluster else None
    try:
        os.environ["BENCH_REDIS_URL"] = redis.url
        if cluster:
            os.environ["BENCH_BROKER_URL"] = cluster.urls()
            os.environ["CELERY_BROKER_MANAGEMENT_URL"] = cluster.management_url()
        prepare("omnium_bench_gameday", redis_db=0)
        # Django's models can be imported only now, with the bench's settings in place.
        from bench import gameday_run

        print(json.dumps(gameday_run.run(args, redis, cluster), indent=2, default=str))
    finally:
        redis.stop()
        if cluster:
            cluster.stop()


if __name__ == "__main__":
    main()
