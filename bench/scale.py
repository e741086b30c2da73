#!/usr/bin/env python
"""Benchmark of delivery at scale: one medal award fanned out to 5,000 destinations, through
real Celery workers, RabbitMQ and loopback receivers (a webhook receiver, and Redis). Prints
one JSON object.

  raw_post_rps        the webhook receiver driven by a minimal HTTP client (bench/raw_post.py,
                      a process of its own, as many connections as delivery threads): the
                      ceiling on this machine, measured in the same run
  provision_s         bulk provisioning of the destinations beyond the first 500
  delivery_worker_start_s / worker_rss_mb_5000   each delivery worker's start (process
                      start -> consuming every queue; the first also waits for RabbitMQ to
                      finish creating the queues provisioning declared) and the largest
                      resident memory of one (after the fan-out)
  delivery_cpu_ms_per_send   the delivery workers' CPU time over the fan-out, per send
  broker_cpu_ms_per_send     RabbitMQ's CPU time over the fan-out (and the award), per send
  postgres_cpu_ms_per_send   the same of this machine's PostgreSQL (its server processes,
                      every connection's: the senders', the builders', the sweeper's, this
                      process's)
  sweep_deliveries_s  the sweeper with every destination (best of three, in this process)
  at_rest / per_destination   once every destination is delivered and idle: RabbitMQ's
                      destination queues (count, memory, consumers) and its nodes' memory,
                      the rows and bytes (indexes included) of each table that grows with
                      destinations, each delivery worker's resident memory; and per
                      destination (the nodes' memory against the run's start)
  fanout_5000_s       one medal award to every destination: commit -> last confirmation;
                      it includes the medal-table stat job, the 1 s quiet period and the build
  sends_per_s         confirmed sends a second during that fan-out (first send -> last)
  send_efficiency     sends_per_s / raw_post_rps
  pushes_during_redis_outage  confirmed webhook sends while the bench's redis-server was
                      stopped (30 s), of a change made during the outage
  host_failover_s     bench/hosts.py's: a worker host cut off mid-send -> its destinations
                      confirmed by the other host (needs root, for the network namespaces)

Own PostgreSQL database (omnium_bench_scale), RabbitMQ vhost, and redis-server (a private
one on a free port: REDIS_URL and the Redis destinations), never the machine's own Redis. Usage:
  .venv/bin/python bench/scale.py [--destinations 5000] [--skip-outage] [--skip-hosts]
"""

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.environment import prepare  # noqa: E402
from bench.process_cpu import cpu_by_process, cpu_seconds  # noqa: E402
from devtools.broker_cluster import BrokerCluster  # noqa: E402
from devtools.processes import ManagedProcess, free_port  # noqa: E402

SEED = 99
FIRST_DESTINATIONS = 500  # subscribed one by one, as an admin would; the rest in bulk
REDIS_EVERY = 5  # every fifth destination is a Redis destination, the rest webhooks
OUTAGE_S = 30.0


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


class PrivateRedis:
    """The bench's own redis-server: the bench stops it for the outage, and the machine's
    Redis (6379) is never touched."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bench-scale-redis-")
        self.process = self.start()

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> ManagedProcess:
        process = ManagedProcess(
            [shutil.which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir], "bench-scale-redis")
        process.wait_for_port(self.port)
        return process

    def stop(self) -> None:
        self.process.stop()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


# Started before Django is set up: REDIS_URL points at it.
REDIS = PrivateRedis()
atexit.register(REDIS.remove)
os.environ["BENCH_REDIS_URL"] = REDIS.url(0)
# --broker-cluster: a three-node RabbitMQ cluster of the bench's own, every process given all
# three nodes (read here, as the settings load before main() parses the rest).
CLUSTER = BrokerCluster("bench-scale-broker", log_dir=ROOT / "var" / "logs") if "--broker-cluster" in sys.argv else None
if CLUSTER:
    atexit.register(CLUSTER.stop)
    os.environ["BENCH_BROKER_URL"] = CLUSTER.urls()
    os.environ["CELERY_BROKER_MANAGEMENT_URL"] = CLUSTER.management_url()
prepare("omnium_bench_scale", redis_db=0)

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from bench import footprint  # noqa: E402
from devtools import broker, processes  # noqa: E402
from devtools.generator import Generator, delete_games, games_code  # noqa: E402
from devtools.loopback.hosts import WebhookReceiver  # noqa: E402
from devtools.loopback.receivers import webhook_secret  # noqa: E402
from devtools.provisioning import provision_destinations  # noqa: E402
from devtools.waiting import live_builds_pending  # noqa: E402
from omnium.clients.models import Client  # noqa: E402
from omnium.delivery.models import DeliveryAttempt, DeliveryState  # noqa: E402
from omnium.delivery.tasks import sweep_deliveries  # noqa: E402
from omnium.feeds.builder import build_file, files_of  # noqa: E402
from omnium.feeds.models import FeedVersion, PendingBuild  # noqa: E402
from omnium.feeds.resolvers import PULL_DEFINITIONS  # noqa: E402
from omnium.games import workflow  # noqa: E402
from omnium.games.models import Fixture, OutboxEntry  # noqa: E402
from omnium.routing import BULK_QUEUES, LIVE_QUEUES  # noqa: E402


def fresh_games():
    call_command("migrate", verbosity=0)
    Client.objects.filter(name__startswith="bench-").delete()
    delete_games(games_code("small", SEED))
    PendingBuild.objects.all().delete()
    games = Generator("small", SEED).run()
    # The pushed files only: the pull definitions (one file per day, fixture…) are built on demand.
    pull_only = {feed_type for feed_type, _ in PULL_DEFINITIONS}
    for key in files_of(games.code):
        if key.split("/")[1] not in pull_only:
            build_file(key)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return games


def destination_settings(receiver: WebhookReceiver, first: int, count: int) -> dict:
    """{name: (kind, config, credentials)}: webhooks on the loopback receiver, every fifth a
    Redis destination on the bench's redis-server."""
    chosen = {}
    for n in range(first, first + count):
        if n % REDIS_EVERY == REDIS_EVERY - 1:
            chosen[f"redis-{n}"] = ("redis", {"url": REDIS.url(1), "key_prefix": f"d{n}:"}, {})
        else:
            chosen[f"hook-{n}"] = ("webhook", receiver.destination_config(f"{receiver.url}/d{n}"),
                                   receiver.credentials())
    return chosen


def provision(games, receiver, first: int, count: int) -> tuple[list[int], float]:
    started = time.monotonic()
    made = provision_destinations("bench-scale", destination_settings(receiver, first, count), games, ["medals"])
    provision_s = round(time.monotonic() - started, 3)
    analyze_as_autovacuum_would()
    return [d.pk for d in made], provision_s


# The tables provisioning filled. A production PostgreSQL runs autovacuum (docs/operations/deploy.md: "Running on
# several machines"), which analyzes a table once a tenth of it changed; this machine's runs
# with autovacuum off, so without this the planner would take 5,000 destinations for the
# handful it saw before provisioning, and the sender's prepared statements would scan
# sequentially what they look up by key (0.36 ms instead of 0.16 ms for the next-file pick).
PROVISIONED_TABLES = ("clients_destination", "clients_subscription", "delivery_state", "delivery_senderstate")


def analyze_as_autovacuum_would() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(PROVISIONED_TABLES)}")


OWED = "SELECT count(*) FROM delivery_state WHERE destination_id = ANY(%s) AND (wanted_seq > sent_seq OR force_resend)"


def owed_count(ids) -> int:
    with connection.cursor() as cursor:
        cursor.execute(OWED, [list(ids)])
        return cursor.fetchone()[0]


def wait_caught_up(ids, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not live_builds_pending() and owed_count(ids) == 0:
            return True
        time.sleep(0.25)
    log(f"warning: {owed_count(ids)} files still owed after {timeout:.0f} s")
    return False


def start_processes(args, env: dict, delivery_start_s: list | None = None) -> list:
    """The build workers, the delivery workers and beat; each delivery worker's start (process
    start -> consuming every destination queue) is appended to `delivery_start_s`."""
    running = []
    try:  # a process that does not start stops those started before it
        running += [processes.start_worker(LIVE_QUEUES, "bench-scale-live", 2, env),
                    processes.start_worker(BULK_QUEUES, "bench-scale-bulk", 1, env)]
        for n in range(1, args.delivery_workers + 1):
            started = time.monotonic()
            running.append(processes.start_delivery_worker(f"bench-scale-delivery-{n}", args.delivery_threads, env,
                                                           timeout=300))
            if delivery_start_s is not None:
                delivery_start_s.append(round(time.monotonic() - started, 1))
        running.append(processes.start_beat("bench-scale-beat", env))
    except BaseException:
        processes.stop_all(running)
        raise
    return running


class MedalAwards:
    """One medal event after another: finish its final (wait for that to be built and sent),
    then award it, the one change measured."""

    def __init__(self, games):
        self.finals = iter(Fixture.objects.filter(games=games, is_medal_fixture=True, status="scheduled")
                           .order_by("starts_at", "id"))

    def award_next(self, ids, timeout: float, wait: bool = True) -> dict:
        """The award's fan-out measured (`wait`: after the final's own versions are sent)."""
        final = next(self.finals)
        workflow.record_score(final.pk, {c.entry_id: 10 + n for n, c in enumerate(final.competitors.all())})
        workflow.finish_fixture(final.pk)
        if wait:
            time.sleep(1.5)
            wait_caught_up(ids, timeout)
        first_seq = FeedVersion.objects.order_by("-seq").values_list("seq", flat=True).first()
        winner = final.competitors.order_by("rank").first().entry_id
        workflow.award_medals(final.event_id, {winner: "gold"})
        committed = OutboxEntry.objects.order_by("-id").first().created_at
        return fanout_measured(ids, first_seq, committed, timeout)


# The ids as one array parameter: Django's `__in` writes 5,000 placeholders, and that count,
# once a second, cost this process and PostgreSQL about 50 ms each time, on the cores the
# fan-out measured needs.
CONFIRMED = "SELECT count(DISTINCT destination_id) FROM delivery_state WHERE destination_id = ANY(%s) AND sent_seq > %s"


def confirmed_count(ids, first_seq: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(CONFIRMED, [list(ids), first_seq])
        return cursor.fetchone()[0]


def fanout_measured(ids, first_seq: int, committed, timeout: float) -> dict:
    """Commit -> the last destination confirmed a version newer than `first_seq`; and the
    confirmed sends a second between the first send's start and the last confirmation."""
    confirmed = DeliveryState.objects.filter(destination_id__in=ids, sent_seq__gt=first_seq)
    deadline = time.monotonic() + timeout
    # Once a second: the time measured comes from the proofs' sent_at, not from when this
    # loop notices.
    while time.monotonic() < deadline and confirmed_count(ids, first_seq) < len(ids):
        time.sleep(1)
    missing = len(ids) - confirmed_count(ids, first_seq)
    last = confirmed.order_by("-sent_at").values_list("sent_at", flat=True).first()
    sends = DeliveryAttempt.objects.filter(destination_id__in=ids, ok=True, seq__gt=first_seq)
    first_start = sends.order_by("started_at").values_list("started_at", flat=True).first()
    span = (last - first_start).total_seconds() if last and first_start else None
    return {"seconds": None if missing or last is None else round((last - committed).total_seconds(), 3),
            "sends": sends.count(), "unconfirmed": missing,
            "sends_per_s": round(sends.count() / span, 1) if span else None}


def resident_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for process {pid}")


def _processes_named(*pgrep_arguments: str) -> list[int]:
    found = subprocess.run(["pgrep", *pgrep_arguments], capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in found]


def postgres_pids() -> list[int]:
    """This machine's PostgreSQL server processes (its backends come and go with connections)."""
    return _processes_named("-x", "postgres")


def broker_pids() -> list[int]:
    """RabbitMQ's Erlang VM on this machine (none when the broker runs elsewhere); with
    --broker-cluster, each node's."""
    if CLUSTER:
        return [node.beam_pid() for node in CLUSTER.nodes]
    # The oldest: a rabbitmqctl run meanwhile is an Erlang VM of its own, gone before the end.
    return _processes_named("-o", "-x", "beam.smp")


def sweep_seconds() -> float:
    """The sweeper's run with every destination, best of three (the machine is shared)."""
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        sweep_deliveries()
        timings.append(time.perf_counter() - started)
    return round(min(timings), 3)


def webhook_ids(ids) -> list[int]:
    return list(DeliveryState.objects.filter(destination_id__in=ids, destination__kind="webhook")
                .values_list("destination_id", flat=True).distinct())


def pushes_during_redis_outage(awards, ids) -> int:
    """Stop the bench's redis-server for OUTAGE_S; at its start a medal event's final ends
    and its medals are awarded (new versions of the medals file every destination takes);
    count the webhook sends confirmed while Redis was down."""
    hooks = webhook_ids(ids)
    first_attempt = DeliveryAttempt.objects.order_by("-id").values_list("id", flat=True).first() or 0
    REDIS.stop()
    stopped = time.monotonic()
    try:
        awards.award_next(ids, timeout=0, wait=False)
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))
        return DeliveryAttempt.objects.filter(id__gt=first_attempt, ok=True, destination_id__in=hooks).count()
    finally:
        REDIS.process = REDIS.start()


def host_failover_s():
    """bench/hosts.py's measure (two network-namespace worker hosts, one cut off mid-send), run
    as a process of its own: its own database, vhost and namespaces."""
    reply = subprocess.run([sys.executable, str(ROOT / "bench" / "hosts.py")], cwd=ROOT, capture_output=True, text=True)
    if reply.returncode != 0:
        log(f"bench/hosts.py failed: {reply.stderr[-2000:]}")
        return None
    return json.loads(reply.stdout)["host_failover_s"]


def at_rest(running, env, destinations: int) -> dict:
    """What every destination costs once delivered and idle: RabbitMQ, PostgreSQL, workers."""
    delivery = [p.pid for p in running if p.name.startswith("bench-scale-delivery")]
    return {"broker": footprint.broker_footprint(env["CELERY_BROKER_URL"], destinations),
            "database": footprint.database_footprint(),
            "delivery_worker_rss_mb": [resident_mb(pid) for pid in delivery]}


def at_scale(args, games, awards, receiver, ids, env) -> dict:
    """Every destination: provisioning, a worker's start and memory, the sweeper, the fan-out."""
    more, provision_s = provision(games, receiver, len(ids), args.destinations - len(ids))
    ids = ids + more
    log(f"{len(ids)} destinations; starting the processes")
    delivery_start_s = []
    running = start_processes(args, env, delivery_start_s)
    result = {"destinations": len(ids), "provision_s": provision_s, "delivery_worker_start_s": delivery_start_s}
    try:
        log("initial catch-up")
        wait_caught_up(ids, 900)
        result["sweep_deliveries_s"] = sweep_seconds()
        result["at_rest"] = at_rest(running, env, len(ids))
        result["per_destination"] = footprint.per_destination(result["at_rest"], args.broker_baseline_bytes, len(ids))
        log(f"fan-out to {len(ids)} destinations")
        delivery = [p.pid for p in running if p.name.startswith("bench-scale-delivery")]
        rabbitmq = broker_pids()
        cpu_before, broker_cpu_before = cpu_seconds(delivery), cpu_seconds(rabbitmq)
        postgres_before = cpu_by_process(postgres_pids())
        fanout = awards.award_next(ids, 300)
        sends = max(1, fanout["sends"])
        cpu_ms_per_send = (cpu_seconds(delivery) - cpu_before) * 1000 / sends
        result["broker_cpu_ms_per_send"] = round((cpu_seconds(rabbitmq) - broker_cpu_before) * 1000 / sends, 1)
        postgres_spent = sum(cpu - postgres_before.get(pid, 0.0) for pid, cpu in cpu_by_process(postgres_pids()).items())
        result["postgres_cpu_ms_per_send"] = round(postgres_spent * 1000 / sends, 1)
        result.update({"fanout_5000_s": fanout["seconds"], "fanout_5000_sends": fanout["sends"],
                       "fanout_5000_unconfirmed": fanout["unconfirmed"], "sends_per_s": fanout["sends_per_s"],
                       "delivery_cpu_ms_per_send": round(cpu_ms_per_send, 1),
                       "worker_rss_mb_5000": max(resident_mb(pid) for pid in delivery)})
        if not args.skip_outage:
            log(f"Redis stopped for {OUTAGE_S:.0f} s")
            result["pushes_during_redis_outage"] = pushes_during_redis_outage(awards, ids)
    finally:
        processes.stop_all(running)
    return result


def run(args) -> dict:
    log("generating a small Games")
    games = fresh_games()
    awards = MedalAwards(games)
    receiver = WebhookReceiver(webhook_secret()).start()
    env = dict(os.environ)
    threads = args.delivery_workers * args.delivery_threads
    try:
        args.broker_baseline_bytes = broker.node_memory_bytes(settings.CELERY_BROKER_MANAGEMENT_URL)
        result = {"load_average_1m_at_start": os.getloadavg()[0], "cores": os.cpu_count(),
                  "raw_post_rps": raw_post_rps(f"{receiver.url}/raw", receiver.secret, threads)}
        ids, _ = provision(games, receiver, 0, min(FIRST_DESTINATIONS, args.destinations))
        result.update(at_scale(args, games, awards, receiver, ids, env))
        result["send_efficiency"] = round(result["sends_per_s"] / result["raw_post_rps"], 3) \
            if result.get("sends_per_s") else None
        if not args.skip_hosts:
            log("a worker host cut off mid-send (bench/hosts.py)")
            result["host_failover_s"] = host_failover_s()
        result["load_average_1m_at_end"] = os.getloadavg()[0]
        return result
    finally:
        receiver.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--destinations", type=int, default=5000)
    parser.add_argument("--delivery-workers", type=int, default=2)
    parser.add_argument("--delivery-threads", type=int, default=16, help="per delivery worker")
    parser.add_argument("--skip-outage", action="store_true")
    parser.add_argument("--skip-hosts", action="store_true", help="no host_failover_s (bench/hosts.py)")
    parser.add_argument("--broker-cluster", action="store_true",
                        help="on a three-node RabbitMQ cluster of the bench's own (each node's memory in at_rest)")
    print(json.dumps(run(parser.parse_args()), indent=2))


def raw_post_rps(url: str, secret: str, connections: int, seconds: float = 5.0) -> float:
    reply = subprocess.run([sys.executable, "-m", "bench.raw_post", url, secret, "--seconds", str(seconds),
                            "--connections", str(connections)], cwd=ROOT, check=True, capture_output=True, text=True)
    return float(reply.stdout.strip())


if __name__ == "__main__":
    main()
