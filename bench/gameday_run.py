"""The day of bench/gameday.py: set-up, the calm phase, the faulted phase, the measures."""

import io
import os
import sys
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.core.management import call_command
from django.db import InterfaceError, OperationalError, connection
from django.utils import timezone

from bench import gameday_faults as faults
from bench import gameday_measures as measures
from devtools import processes
from devtools.generator import Generator
from devtools.loopback import hosts, servers
from devtools.loopback import receivers as loopback
from devtools.private_redis import PrivateRedis
from devtools.provisioning import provision_destination
from devtools.replay import ACTIONS, plan_day
from devtools.supervisor import Supervisor
from devtools.waiting import live_builds_pending
from omnium.clients.models import ApiKey, Client, Entitlement
from omnium.delivery.models import DeliveryState
from omnium.feeds.builder import build_file, files_of
from omnium.feeds.models import FeedDefinition, FeedVersion
from omnium.feeds.resolvers.base import UnknownFile
from omnium.games.errors import WorkflowError
from omnium.redis_client import redis_client
from omnium.routing import BULK_QUEUES, LIVE, build_queue, stats_queue

SEED = 12
# With --broker-cluster: the node killed at 230 s is started again 20 s later; at 260 s the
# whole broker goes for 30 s. The gap is looked for from 5 s before the kill to 30 s after.
BROKER_NODE_BACK_AFTER_S = 20.0
BROKER_OUTAGE_S = 30.0
BROKER_GAP_WINDOW_S = (5.0, 30.0)
FEEDS = ("calendar", "results", "medals", "standings")
PER_KIND = 6  # x 5 transports = 30 healthy destinations; plus a refusing webhook and a freezing SFTP
DAYS = (3, 4, 5)  # played one after the other, nights left out, so the replay never runs dry
PULLED = ("medals", "results")
LOG_DIR = processes.ROOT / "var" / "logs" / "gameday"
BUILD, STATS, BULK, DELIVERY, BEAT, API = "gameday-build", "gameday-stats", "gameday-bulk", "gameday-delivery", \
    "gameday-beat", "gameday-api"


def log(message: str) -> None:
    print(f"[gameday {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- set-up ---------------------------------------------------------------------------------


def fresh_games():
    call_command("migrate", verbosity=0)
    # The bench's own database, emptied without deletion hooks: the last run rotated its
    # destinations' credentials to a key that is gone, and deleting them would decrypt them.
    call_command("flush", interactive=False, verbosity=0)
    redis_client().flushdb()
    games = Generator("asian-games", SEED).run()
    for key in files_of(games.code):
        try:
            build_file(key)
        except UnknownFile:  # the split pull files (calendar_day): prepare_pull_files makes them
            log(f"not built now: {key}")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # tidy tables: runs compare (see bench/deliver.py)
    return games


def the_day(games) -> list:
    """The steps of DAYS, each day starting right after the last change of the one before."""
    steps, offset = [], 0.0
    for day in DAYS:
        planned = plan_day(games, day)
        if not planned:
            continue
        shift = offset - planned[0].at_s
        for step in planned:
            step.at_s += shift
        steps += planned
        offset = steps[-1].at_s + 60
    return steps


def healthy_destinations(games, receivers) -> list:
    return [provision_destination(f"gameday-{kind}", f"{kind}-{n}", receivers.settings(kind, f"{kind}{n}"), games,
                                  FEEDS)
            for kind in loopback.KINDS for n in range(PER_KIND)]


def faulty_destinations(games, workdir):
    """A webhook on a receiver whose answers we script, an SFTP destination on a server of its own."""
    refusing = hosts.WebhookReceiver(loopback.webhook_secret(), keep_bodies=False).start()
    sshd = servers.start_sshd(loopback._folder(workdir, "sftp-freezing"))
    (sshd.root / "frozen").mkdir()
    webhook = provision_destination("gameday-faulted", "webhook-refusing",
                                    ("webhook", refusing.destination_config(), refusing.credentials()), games, FEEDS)
    sftp = provision_destination("gameday-faulted", "sftp-freezing",
                                 ("sftp", sshd.destination_config(str(sshd.root / "frozen")), sshd.credentials()),
                                 games, FEEDS)
    return refusing, sshd, webhook, sftp


def pull_key(games) -> str:
    call_command("ensure_pull_cache", games=games.code, no_build=True, stdout=io.StringIO())
    client, _ = Client.objects.get_or_create(name="gameday-pull")
    for feed_type in PULLED:
        Entitlement.objects.get_or_create(client=client, definition=FeedDefinition.objects.get(games=games,
                                                                                                feed_type=feed_type))
    return ApiKey.issue(client, "gameday")[1]


def start_processes(supervisor: Supervisor, env: dict, args, api_port: int) -> list[str]:
    """Every process under the supervisor; the build and stat workers apart, so that each can be
    killed on its own (in production both are the live-lane worker). Returns the workers' names."""
    supervisor.add(BUILD, lambda: processes.start_worker([build_queue(LIVE)], BUILD, 2, env, LOG_DIR))
    supervisor.add(STATS, lambda: processes.start_worker([stats_queue(LIVE)], STATS, 1, env, LOG_DIR))
    supervisor.add(BULK, lambda: processes.start_worker(BULK_QUEUES, BULK, 1, env, LOG_DIR))
    delivery = [f"{DELIVERY}-{n}" for n in range(1, args.delivery_workers + 1)]
    for name in delivery:
        supervisor.add(name, lambda name=name: processes.start_delivery_worker(name, 32, env, LOG_DIR))
    supervisor.add(BEAT, lambda: processes.start_beat(BEAT, env, LOG_DIR))
    supervisor.add(API, lambda: processes.start_api(api_port, API, env, LOG_DIR))
    return [BUILD, STATS, BULK, *delivery, BEAT, API]


def wait_caught_up(timeout: float, destination_ids) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if not live_builds_pending() and not any(
                    s.owed for s in DeliveryState.objects.filter(destination_id__in=destination_ids)):
                return True
        except (OperationalError, InterfaceError):
            connection.close()
        time.sleep(0.5)
    return False


# --- the replay -----------------------------------------------------------------------------


class Replay(threading.Thread):
    """Plays the steps against the wall clock, as an editor would: a command refused by a
    database that is restarting is tried again until it goes through."""

    def __init__(self, steps, speed: float, seconds: float):
        super().__init__(name="replay", daemon=True)
        self.steps, self.speed, self.seconds = steps, speed, seconds
        self.played = self.refused = self.retried = 0

    def run(self) -> None:
        origin, started = self.steps[0].at_s, time.monotonic()
        try:
            for step in self.steps:
                due = (step.at_s - origin) / self.speed
                if due > self.seconds:
                    return
                time.sleep(max(0.0, due - (time.monotonic() - started)))
                self._commit(step)
        finally:
            connection.close()

    def _commit(self, step) -> None:
        for _ in range(120):
            try:
                ACTIONS[step.action](step)
                self.played += 1
                return
            except WorkflowError:
                self.refused += 1
                return
            except (OperationalError, InterfaceError):
                self.retried += 1
                connection.close()
                time.sleep(0.5)


# --- the faults -----------------------------------------------------------------------------


def inject_faults(started: float, ctx: dict, args) -> list:
    """The schedule of the module docstring of bench/gameday.py, in order."""
    supervisor, healthy = ctx["supervisor"], ctx["healthy_ids"]
    delivery = [name for name in supervisor.children if name.startswith(DELIVERY)]
    schedule = [
        (10, lambda: faults.refuse_webhook(ctx["refusing"], ctx["webhook_id"], 90)),
        (15, lambda: faults.freeze_sftp_server(ctx["sshd"], ctx["sftp_id"], 120)),
        (20, lambda: faults.kill_build_worker(supervisor, BUILD)),
        (50, lambda: faults.kill_delivery_worker(supervisor, delivery[0], healthy)),
        (80, lambda: faults.kill_stat_worker(supervisor, STATS)),
        (140, lambda: faults.restart_redis(ctx["redis"])),
        (170, None if args.skip_postgres_restart else faults.restart_postgres),
        (200, lambda: faults.rotate_credentials(supervisor, ctx["env"], [BUILD, STATS, BULK, *delivery, BEAT])),
    ]
    if ctx.get("cluster"):
        schedule += [
            (230, lambda: faults.kill_broker_node(ctx["cluster"], ctx["env"]["CELERY_BROKER_URL"].split(";")[0],
                                                  back_after_s=BROKER_NODE_BACK_AFTER_S)),
            (260, lambda: faults.stop_the_whole_broker(ctx["cluster"], BROKER_OUTAGE_S)),
        ]
    done = []
    # A fault whose injection takes long (the rolling restart of the credential rotation takes
    # about a minute on 2 cores) moves every later one back by as much, so the spacing holds:
    # without it the node kill and the whole broker's loss fell on the same second.
    late_by = 0.0
    for at_s, inject in schedule:
        if inject is None:
            continue
        faults.wait_for(at_s + late_by, started)
        fault = inject()
        late_by = max(late_by, time.monotonic() - started - at_s)
        log(f"fault: {fault.name}")
        done.append(fault)
    return done


def fault_report(done: list, healthy_ids) -> tuple[list, float | None, float | None]:
    """Each fault with its recovery; the worst of our own faults and of the destinations'."""
    own, destination = [], []
    for fault in done:
        if fault.kind == faults.OWN:
            fault.details.update(measures.recovery(fault.ended_at, healthy_ids))
            if fault.name.startswith("kill -9 broker node"):
                fault.details["longest_gap_s"] = measures.longest_gap(
                    fault.started_at - timedelta(seconds=BROKER_GAP_WINDOW_S[0]),
                    fault.started_at + timedelta(seconds=BROKER_GAP_WINDOW_S[1]), healthy_ids)
            own.append(fault.details["recovery_s"])
        elif fault.ended_at is not None:
            fault.details["recovery_s"] = measures.destination_recovery(fault.ended_at, fault.details["destination_id"])
            destination.append(fault.details["recovery_s"])
    worst = lambda values: None if None in values or not values else max(values)  # noqa: E731
    return [fault.as_dict() for fault in done], worst(own), worst(destination)


def broker_figures(done: list) -> dict:
    """The issue's two broker figures, from the report of the broker faults (when run on a
    cluster): the longest gap without a confirmed send around a node's loss, and the time from
    the whole broker's return until every healthy destination confirmed a newer version."""
    by_name = {fault.name: fault.details for fault in done}
    node = next((d for name, d in by_name.items() if name.startswith("kill -9 broker node")), None)
    whole = next((d for name, d in by_name.items() if name.startswith("whole broker down")), None)
    if node is None and whole is None:
        return {}
    return {"broker_node_loss_gap_s": node and node["longest_gap_s"],
            "broker_return_first_send_s": whole and whole["recovery_first_s"],
            "broker_return_catch_up_s": whole and whole["recovery_s"]}


def calm_baseline(start, end, healthy_ids) -> float | None:
    """The recovery measure at moments of the calm phase when nothing failed: the part of any
    recovery that is only the wait for the next change, its build and its send."""
    values, moment = [], start + timedelta(seconds=30)
    while moment < end - timedelta(seconds=30):
        values.append(measures.recovery(moment, healthy_ids)["recovery_s"])
        moment += timedelta(seconds=30)
    values = [value for value in values if value is not None]
    return max(values) if values else None


# --- the day --------------------------------------------------------------------------------


def run(args, redis: PrivateRedis, cluster=None) -> dict:
    log("generating and building an asian-games-scale Games")
    games = fresh_games()
    receiver_redis = PrivateRedis("gameday-receiver-redis", LOG_DIR)  # the Redis destinations' server
    receivers = loopback.start(receiver_redis.url)
    receivers.webhook.keep_bodies = False
    refusing, sshd, webhook, sftp = faulty_destinations(games, receivers.workdir)
    supervisor = Supervisor(report=log)
    try:
        healthy = healthy_destinations(games, receivers)
        healthy_ids = [d.pk for d in healthy]
        key = pull_key(games)
        env = dict(os.environ)
        api_port = processes.free_port()
        log(f"starting workers, beat and the API under the supervisor; {len(healthy) + 2} destinations")
        start_processes(supervisor, env, args, api_port)
        if not wait_caught_up(300, [*healthy_ids, webhook.pk, sftp.pk]):
            log("warning: the initial catch-up did not finish")
        ctx = {"supervisor": supervisor, "healthy_ids": healthy_ids, "refusing": refusing, "sshd": sshd,
               "webhook_id": webhook.pk, "sftp_id": sftp.pk, "redis": redis, "env": env, "cluster": cluster}
        return the_phases(args, games, ctx, receivers, refusing, api_port, key)
    finally:
        supervisor.stop()
        for stop in (refusing.stop, sshd.process.stop, receivers.stop, receiver_redis.stop):
            try:
                stop()
            except Exception:  # noqa: BLE001 - stopping the rest matters more
                pass


def retrying(query, *args):
    """`query(*args)`, tried again over a PostgreSQL restart (ours, or anyone's on the machine)."""
    for _ in range(60):
        try:
            return query(*args)
        except (OperationalError, InterfaceError):
            connection.close()
            time.sleep(0.5)
    return query(*args)


def latest_seq() -> int:
    return retrying(lambda: FeedVersion.objects.order_by("-seq").values_list("seq", flat=True).first() or 0)


def the_phases(args, games, ctx, receivers, refusing, api_port, key) -> dict:
    healthy_ids = ctx["healthy_ids"]
    all_ids = [*healthy_ids, ctx["webhook_id"], ctx["sftp_id"]]
    pull = measures.PullClient(f"http://127.0.0.1:{api_port}",
                               key, {f"/v1/feeds/{games.code}/{feed}": f"{games.code}/{feed}" for feed in PULLED})
    calm_seq, calm_start = latest_seq(), timezone.now()
    replay = Replay(the_day(games), args.speed, (args.calm_minutes + args.minutes) * 60)
    log(f"calm phase: {args.calm_minutes:g} min at x{args.speed:g}")
    replay.start()
    time.sleep(args.calm_minutes * 60)
    faulted_seq, faulted_start = latest_seq(), timezone.now()
    log(f"faulted phase: {args.minutes:g} min")
    pull.start()
    done = inject_faults(time.monotonic(), ctx, args)
    replay.join()
    pull_result = pull.stop()
    connection.close()
    log(f"replay done ({replay.played} changes); settling for up to {args.settle_seconds:g} s")
    settled = wait_caught_up(args.settle_seconds, all_ids)
    time.sleep(5)  # the thaw's and the refusal's last timers
    return retrying(measure, args, ctx, replay, done, pull_result, settled, receivers, refusing,
                    (calm_start, calm_seq, faulted_start, faulted_seq))


def measure(args, ctx, replay, done, pull_result, settled, receivers, refusing, phases) -> dict:
    calm_start, calm_seq, faulted_start, faulted_seq = phases
    healthy_ids = ctx["healthy_ids"]
    all_ids = [*healthy_ids, ctx["webhook_id"], ctx["sftp_id"]]
    report, recovery_max, destination_max = fault_report(done, healthy_ids)
    calm_ages, faulted_ages = (measures.ages(healthy_ids, calm_seq, faulted_seq),
                               measures.ages(healthy_ids, faulted_seq))
    lost = measures.versions_lost(healthy_ids)
    webhook_older, webhook_checked = measures.older_after_newer_at_webhooks([receivers.webhook, refusing])
    return {
        "destinations": len(all_ids), "healthy_destinations": len(healthy_ids), "replay_speed": args.speed,
        "changes_played": replay.played, "changes_retried_after_a_database_error": replay.retried,
        "changes_per_s": round(replay.played / ((args.calm_minutes + args.minutes) * 60), 2),
        "faults_injected": len(done), "faults": report, **broker_figures(done),
        "recovery_s_max": recovery_max,
        "recovery_calm_baseline_s": calm_baseline(calm_start, faulted_start, healthy_ids),
        "destination_recovery_s_max": destination_max,
        "retry_pace_s": {"fast_retries": 5, "slow_retry_s": settings.OMNIUM["DELIVERY_SLOW_RETRY_S"]},
        "settled": settled,
        "versions_lost": len(lost), "versions_lost_sample": lost[:5],
        "faulted_destinations_behind": len(measures.versions_lost([ctx["webhook_id"], ctx["sftp_id"]])),
        "older_after_newer": measures.older_after_newer_in_attempts(all_ids) + webhook_older,
        "webhook_deliveries_checked": webhook_checked,
        "files_parked": measures.files_parked(all_ids, calm_start),
        "age_p95_calm_s": measures.p(calm_ages, 0.95), "age_p95_s": measures.p(faulted_ages, 0.95),
        "age_p50_calm_s": measures.p(calm_ages, 0.5), "age_p50_s": measures.p(faulted_ages, 0.5),
        "age_max_s": measures.p(faulted_ages, 1.0), "sends_measured": len(calm_ages) + len(faulted_ages),
        "age_ratio": (round(measures.p(faulted_ages, 0.95) / measures.p(calm_ages, 0.95), 3)
                      if calm_ages and faulted_ages else None),
        **pull_result,
        "restarts_after_a_crash": ctx["supervisor"].restarts,
    }
