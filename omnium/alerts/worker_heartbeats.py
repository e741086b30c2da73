"""Worker heartbeats in PostgreSQL: every Celery worker says, every few seconds, that it lives
and which lanes it consumes. PostgreSQL, not Redis: a Redis outage must not look like every
worker gone (the dead-man's switch would cry wolf exactly when it matters)."""

import json
import logging
import threading
import time

from celery.signals import worker_ready
from django.db import connection
from django.db.models.functions import Now

from omnium.alerts.models import WorkerHeartbeat
from omnium.conf import omnium_setting
from omnium.routing import destination_of

log = logging.getLogger(__name__)


def lanes_of(consumer) -> list[str]:
    """The queues a worker consumes, less the per-destination ones (lanes, not destinations)."""
    if consumer.task_consumer is None:
        return []
    names = (queue.name for queue in consumer.task_consumer.queues)
    return sorted(name for name in names if destination_of(name) is None)


def beat(hostname: str, lanes: list[str]) -> None:
    WorkerHeartbeat.objects.update_or_create(hostname=hostname, defaults={"queues": lanes, "beat_at": Now()})


def silent_after_s() -> float:
    """A worker whose heartbeat is older than this (three intervals) is gone or stuck."""
    return 3 * omnium_setting("HEARTBEAT_INTERVAL_S")


def live_lanes() -> set[str]:
    """Every lane that a worker with a recent heartbeat consumes."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT jsonb_array_elements_text(queues) FROM alerts_workerheartbeat"
            " WHERE beat_at > clock_timestamp() - %s * interval '1 second'",
            [silent_after_s()])
        return {row[0] for row in cursor.fetchall()}


def heartbeat_of(hostname: str) -> tuple[float, list[str]] | None:
    """(seconds since the worker's last heartbeat, by the database clock; the lanes it consumes),
    or None if it never beat."""
    with connection.cursor() as cursor:
        # queues as text: a raw cursor hands jsonb back undecoded
        cursor.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp() - beat_at), queues::text"
                       " FROM alerts_workerheartbeat WHERE hostname = %s", [hostname])
        row = cursor.fetchone()
    return None if row is None else (float(row[0]), json.loads(row[1]))


def _beat_forever(consumer) -> None:
    hostname = getattr(consumer, "hostname", "worker")
    while True:
        try:
            lanes = lanes_of(consumer)
            if lanes:  # not while the worker starts or stops its consumer
                beat(hostname, lanes)
        except Exception as exc:  # a heartbeat must never kill the worker; PostgreSQL may be away
            log.warning("worker heartbeat not written: %s: %s", type(exc).__name__, exc)
            connection.close()
        time.sleep(omnium_setting("HEARTBEAT_INTERVAL_S"))


@worker_ready.connect
def _start_beating(sender, **kwargs):
    threading.Thread(target=_beat_forever, args=(sender,), daemon=True, name="worker-heartbeat").start()
