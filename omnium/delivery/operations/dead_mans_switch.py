"""The dead-man's switch: silence is an alarm.

Runs in the beat process (one per installation), not in a worker, so it works when every
worker is dead. Every OMNIUM_DEAD_MANS_SWITCH_EVERY_S it checks, from PostgreSQL:
- that every lane (build, stats, delivery control, alerts) has a worker with a recent
  heartbeat: otherwise a `no_worker` alert for that lane, resolved when one is back;
- that no destination's owed file waits too long (the "behind" alert, which the delivery
  sweeper also raises, but the sweeper runs on a delivery worker that may be gone).
Its alerts' notices are sent from here too: the notice task's worker may be the dead one.
"""

import logging
import threading
import time

from celery.signals import beat_init
from django.db import connection

from omnium.alerts import notices, worker_heartbeats
from omnium.alerts.models import Alert
from omnium.alerts.service import open_alert, resolve_alert
from omnium.conf import omnium_setting
from omnium.delivery.operations import behind_alert
from omnium.routing import BULK_QUEUES, DELIVERY_CONTROL_QUEUE, LIVE_QUEUES

log = logging.getLogger(__name__)

LANES = (*LIVE_QUEUES, *BULK_QUEUES, DELIVERY_CONTROL_QUEUE)
NO_WORKER = "no_worker"


def lanes_without_a_worker() -> list[str]:
    live = worker_heartbeats.live_lanes()
    return [lane for lane in LANES if lane not in live]


def check() -> list[str]:
    """One look; returns the lanes no live worker consumes."""
    silent = lanes_without_a_worker()
    for lane in LANES:
        if lane in silent:
            open_alert(NO_WORKER, f"lane:{lane}", f"No worker has consumed the {lane} queue for "
                       f"{worker_heartbeats.silent_after_s():g} s: its work waits.", lane=lane)
        else:
            resolve_alert(NO_WORKER, f"lane:{lane}")
    behind_alert.check_behind()
    for alert in notices.unsent().filter(kind__in=[NO_WORKER, behind_alert.KIND]):
        notices.send_pending(alert)
    return silent


def _watch_forever(grace_s: float) -> None:
    time.sleep(grace_s)  # workers started with beat need a moment to send their first heartbeat
    while True:
        try:
            check()
        except Exception as exc:  # PostgreSQL may be away: look again next time
            log.warning("dead-man's switch could not look: %s: %s", type(exc).__name__, exc)
            connection.close()
        time.sleep(omnium_setting("DEAD_MANS_SWITCH_EVERY_S"))


@beat_init.connect
def _start_watching(sender=None, **kwargs):
    grace = worker_heartbeats.silent_after_s()
    threading.Thread(target=_watch_forever, args=(grace,), daemon=True, name="dead-mans-switch").start()


def silent_lanes_for_screens() -> list[str]:
    """The lanes whose `no_worker` alert is open (what the status page shows, in red)."""
    subjects = Alert.objects.filter(kind=NO_WORKER, resolved_at__isnull=True).values_list("subject", flat=True)
    return sorted(subject.removeprefix("lane:") for subject in subjects)
