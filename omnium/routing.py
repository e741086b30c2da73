"""Every queue name, task route and beat entry of Omnium, in one place.

Lanes keep slow work from sitting in front of urgent work: a change during a live match is
built and its stats computed on the `live` lanes, a full rebuild or an import on `bulk`, a
historical recomputation on `backfill`. Run at least one worker that consumes only the live
queues, so that no bulk task can occupy it.
"""

from kombu import Exchange, Queue

from omnium.conf import omnium_setting

LIVE, BULK, BACKFILL = "live", "bulk", "backfill"
BUILD_LANES = (LIVE, BULK)
STAT_LANES = (LIVE, BULK, BACKFILL)


def build_queue(lane: str) -> str:
    return f"build.{lane}"


def stats_queue(lane: str) -> str:
    return f"stats.{lane}"


# Delivery: one queue per destination (visible in Flower), and one control queue that marks
# a worker as a delivery worker and carries the delivery sweeper.
DELIVERY_CONTROL_QUEUE = "deliver.control"


def is_delivery_worker(app) -> bool:
    """A delivery worker is one told to consume the delivery control queue (-Q deliver.control)."""
    return DELIVERY_CONTROL_QUEUE in app.amqp.queues.consume_from


def delivery_queue(destination_id: int) -> str:
    return f"deliver.{destination_id}"


def destination_of(queue_name: str) -> int | None:
    """The destination whose queue this is, or None for a lane (deliver.control, build.live…)."""
    prefix, _, number = queue_name.partition(".")
    return int(number) if prefix == "deliver" and number.isdigit() else None


# A destination's queue expires once no worker has consumed it for a day: when its
# destination is deleted the workers stop consuming it, once two sweeps in a row have left it
# out (kick_consumer.consume_exactly). A kick
# declares it again, so an expired queue lost only hints (the sweeper re-kicks).
DELIVERY_QUEUE_EXPIRES_MS = 24 * 3600 * 1000


def hint_queue(name: str, arguments: dict | None = None) -> Queue:
    """Every queue of Omnium, as each process declares it: RabbitMQ refuses a second
    declaration with other arguments.

    Not durable: its messages are hints (ARCHITECTURE rule 1), and a queue that is not durable
    survives the loss of its RabbitMQ node by being made again. A cluster forgets such a queue
    when its node goes down, cancels its consumers, and the next declaration (a worker's
    reconnecting consumer, a kick whose message came back) makes it on a node that is up; the
    hints it held are made again from PostgreSQL by the sweepers. A durable queue of one node
    stays the dead node's: every declaration and consumer is refused with "home node ... is
    down or inaccessible" until that node returns, and Celery's workers exit on it.
    docs/decisions/007-broker-cluster.md weighs this against replicated (quorum) queues."""
    return Queue(name, Exchange(name, "direct"), name, durable=False, queue_arguments=arguments)


def delivery_queue_declaration(destination_id: int) -> Queue:
    """How a destination's queue is declared, by the kicks and by the consuming workers alike."""
    return hint_queue(delivery_queue(destination_id), {"x-expires": DELIVERY_QUEUE_EXPIRES_MS})


# Tasks sent by name, so the modules that send them need not import the task modules
# (which import them back).
HANDLE_CHANGES = "omnium.feeds.tasks.handle_changes"
BUILD_DUE = "omnium.feeds.tasks.build_due"
RUN_STAT_JOB = "omnium.games.tasks.run_stat_job"
PREPARE_PULL_FILES = "omnium.pullapi.tasks.prepare_pull_files"
RUN_PROBE = "omnium.delivery.tasks.run_probe"  # a connection test or host-key fetch, in a delivery worker

# Alert notices have their own queue: a slow mail server never delays a build or a send.
ALERTS_QUEUE = "alerts"

LIVE_QUEUES = [build_queue(LIVE), stats_queue(LIVE)]
BULK_QUEUES = [build_queue(BULK), stats_queue(BULK), stats_queue(BACKFILL), ALERTS_QUEUE]


def task_queues() -> list[Queue]:
    """Every task queue (Celery's `task_queues`), declared as every other queue: see hint_queue."""
    lanes = [build_queue(lane) for lane in BUILD_LANES] + [stats_queue(lane) for lane in STAT_LANES]
    return [hint_queue(name) for name in [*lanes, DELIVERY_CONTROL_QUEUE, ALERTS_QUEUE]]


def task_routes() -> dict:
    """Default queues; tasks that run in a lane pass `queue=` explicitly when sent."""
    return {
        "omnium.feeds.tasks.*": {"queue": build_queue(LIVE)},
        "omnium.games.tasks.*": {"queue": stats_queue(LIVE)},
        "omnium.delivery.tasks.*": {"queue": DELIVERY_CONTROL_QUEUE},
        # Reports, not delivery: summed where bulk work runs, never beside a send.
        "omnium.reports.tasks.*": {"queue": build_queue(BULK)},
        "omnium.alerts.tasks.*": {"queue": ALERTS_QUEUE},
        # Building a new Games' pull files is bulk work: it must not hold up a live change.
        "omnium.pullapi.tasks.*": {"queue": build_queue(BULK)},
    }


# The sweeps that re-derive owed work from PostgreSQL: beat's entry name, the task, and the
# queue it runs on. Beat sends each every SWEEP_INTERVAL_S; a worker that connects asks for
# those of its queues at once (omnium.messaging.sweep_on_connect).
SWEEPS = {
    "sweep-changes-and-builds": ("omnium.feeds.tasks.sweep", build_queue(LIVE)),
    "sweep-stat-jobs": ("omnium.games.tasks.sweep_stat_jobs", stats_queue(LIVE)),
    "sweep-deliveries": ("omnium.delivery.tasks.sweep_deliveries", DELIVERY_CONTROL_QUEUE),
}


def sweep_expires_s() -> float:
    """A sweep not run within two intervals is dropped: the next one does its work."""
    return omnium_setting("SWEEP_INTERVAL_S") * 2


def beat_schedule() -> dict:
    every = omnium_setting("SWEEP_INTERVAL_S")
    return {
        **{name: {"task": task, "schedule": every, "options": {"expires": sweep_expires_s()}}
           for name, (task, _) in SWEEPS.items()},
        "sweep-alert-notices": {
            "task": "omnium.alerts.tasks.sweep_alert_notices",
            "schedule": 30.0,
        },
        **retention_schedule(),
        # Today's and yesterday's freshness per client, from the proofs (replaced each time).
        "summarize-freshness": {
            "task": "omnium.reports.tasks.summarize_freshness",
            "schedule": 3600.0,
            "options": {"expires": 3600.0},
        },
        "repair-pull-caches": {
            "task": "omnium.pullapi.tasks.repair_pull_caches",
            "schedule": omnium_setting("PULL_CACHE_REPAIR_S"),
            "options": {"expires": omnium_setting("PULL_CACHE_REPAIR_S")},
        },
    }


# Retention: each table that grows with every change or failure has its pruning task.
RETENTION_TASKS = {
    "prune-delivery-attempts": "omnium.delivery.tasks.prune_attempts",  # ATTEMPT_RETENTION_DAYS
    "prune-freshness-days": "omnium.reports.tasks.prune_freshness_days",  # FRESHNESS_RETENTION_DAYS
    "prune-handled-outbox": "omnium.feeds.tasks.prune_outbox",  # OUTBOX_RETENTION_DAYS
    "prune-feed-versions": "omnium.feeds.tasks.prune_feed_versions",  # FEED_VERSION_RETENTION_DAYS
    "prune-resolved-alerts": "omnium.alerts.tasks.prune_resolved_alerts",  # ALERT_RETENTION_DAYS
    "prune-finished-stat-jobs": "omnium.games.tasks.prune_finished_stat_jobs",  # STAT_JOB_RETENTION_DAYS
}


def retention_schedule() -> dict:
    every = omnium_setting("PRUNE_INTERVAL_S")
    return {name: {"task": task, "schedule": every, "options": {"expires": every}}
            for name, task in RETENTION_TASKS.items()}
