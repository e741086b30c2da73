"""The Celery application. Routing and the beat schedule live in omnium.routing."""

import gc
import logging
import os
import signal

from celery import Celery
from celery.signals import after_task_publish, beat_init, celeryd_init, worker_process_init, worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")

app = Celery("omnium", amqp="omnium.messaging.reconnecting:PromptAMQP")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.steps["consumer"].add("omnium.delivery.worker.kick_consumer:DeliveryKicks")
app.steps["consumer"].add("omnium.messaging.sweep_on_connect:SweepOnConnect")

# database_connections connects its task signals when imported; cpu_priority is called below.
from omnium.messaging import outage  # noqa: E402
from omnium.metrics import process_files  # noqa: E402
from omnium.workers import cpu_priority, database_connections  # noqa: E402,F401


@app.on_after_configure.connect
def _apply_routing(sender, **kwargs):
    from omnium import routing

    sender.conf.task_queues = routing.task_queues()
    sender.conf.task_routes = routing.task_routes()
    sender.conf.beat_schedule = routing.beat_schedule()


@worker_process_init.connect  # each prefork child, after the fork
@worker_ready.connect  # the worker itself (a threads pool runs tasks here)
def _freeze_startup_objects(**kwargs):
    """Leave the objects of start-up (Django, the models, the task modules) out of every
    garbage collection from now on. A build allocates some 100k objects, enough to trigger
    full collections, and each walked that whole start-up heap: five of seven calendar
    resolves in a row on the bench Games took 0.17-0.19 s instead of 0.12 s. Frozen, all
    seven took 0.113-0.123 s."""
    gc.freeze()


@celeryd_init.connect  # the worker's first process, before it runs a task or forks
def _say_if_this_workers_counts_are_invisible(**kwargs):
    """A worker's counts (sends, failures, builds) reach /metrics only through the files its
    launcher chose (omnium/metrics/launch.py)."""
    process_files.warn_unless_counted("this worker")


@celeryd_init.connect
def _yield_the_cpu_on_bulk_lanes(options=None, **kwargs):
    cpu_priority.yield_if_bulk_only((options or {}).get("queues"))


@beat_init.connect
def _stop_between_ticks_on_sigterm(sender, **kwargs):
    """Celery beat's own SIGTERM handler raises SystemExit wherever beat is, in the middle of
    a publish too; closing the channel after that cut-off method then waited for an answer
    that never came (one stop in eight on a loaded machine; systemd killed beat after its
    stop timeout). Asked to stop instead (`Service.stop`), beat ends after the tick it is in,
    within one sweep interval, and saves its schedule."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sender.stop())


@beat_init.connect
def _one_notice_per_broker_outage_in_beat(**kwargs):
    """Beat logs a traceback for each sweep it cannot send (about 400 in a 38 s outage):
    the outage is told once instead (omnium.messaging.outage)."""
    logging.getLogger("celery.beat").addFilter(outage.OncePerOutage())


@celeryd_init.connect
def _one_notice_per_broker_outage_in_a_worker(**kwargs):
    """A worker's consumer logs an error for each try of its lost connection, every second
    for as long as the broker is gone: the outage is told once instead."""
    logging.getLogger("celery.worker.consumer.consumer").addFilter(outage.OncePerOutage())


@after_task_publish.connect
def _broker_took_a_task(**kwargs):
    outage.succeeded()
