"""Celery tasks of delivery. drain_destination runs on the destination's own queue."""

import time
from datetime import timedelta

from celery import shared_task
from django.db import connection
from django.utils import timezone
from redis.exceptions import RedisError

from omnium.conf import omnium_setting
from omnium.delivery import behind_alert, queues, sender
from omnium.delivery.kicks import kick
from omnium.delivery.models import DeliveryAttempt
from omnium.redis_client import redis_client


@shared_task
def drain_destination(destination_id: int) -> str:
    """Drain this destination, then take over others still waiting for a sender (see
    sender.help_waiting); returns how this destination's drain ended."""
    started = time.monotonic()
    outcome = sender.drain(destination_id, started)
    sender.help_waiting(started)
    return outcome


NEEDS_A_KICK = """
SELECT DISTINCT ds.destination_id FROM delivery_state ds
JOIN clients_subscription s ON s.id = ds.subscription_id AND s.active
LEFT JOIN delivery_senderstate ss ON ss.destination_id = ds.destination_id
WHERE (ds.wanted_seq > ds.sent_seq OR ds.force_resend)
  AND (ss.lease_until IS NULL OR ss.lease_until < clock_timestamp())
  AND (ss.retry_at IS NULL OR ss.retry_at <= clock_timestamp())
  AND NOT COALESCE(ss.paused, false) AND ds.dead_lettered_at IS NULL
  -- owed for a while: a kick sent with the work arrives within milliseconds, so younger work
  -- most likely has its kick in the queue already
  AND (ds.wanted_at < clock_timestamp() - interval '3 seconds' OR ds.force_resend)
"""

# The sweeper re-kicks one destination at most this often: while a backlog drains, its
# queued kicks are still on their way, and re-kicking every sweep would multiply them.
REKICK_EVERY_S = 10

TIMERS_DUE = """
UPDATE delivery_state ds SET force_resend = true
FROM clients_subscription s
WHERE s.id = ds.subscription_id AND s.active AND s.schedule_seconds > 0 AND NOT ds.force_resend
  AND ds.sent_at < clock_timestamp() - s.schedule_seconds * interval '1 second'
"""


@shared_task
def sweep_deliveries() -> dict:
    """The backstop (beat): timers due, destinations with owed work and no live sender,
    destinations behind, and every destination queue announced to the delivery workers."""
    with connection.cursor() as cursor:
        cursor.execute(TIMERS_DUE)
        timers = cursor.rowcount
        cursor.execute(NEEDS_A_KICK)
        idle = [row[0] for row in cursor.fetchall()]
    queues.announce_queues(queues.destination_queues())
    kicked = [d for d in idle if _first_rekick_in_a_while(d)]
    for destination_id in kicked:
        kick(destination_id)
    behind = behind_alert.check_behind()
    return {"kicked": len(kicked), "timers_due": timers, "behind": behind}


def _first_rekick_in_a_while(destination_id: int) -> bool:
    try:
        return bool(redis_client().set(f"omnium:rekicked:{destination_id}", 1, ex=REKICK_EVERY_S, nx=True))
    except RedisError:  # without Redis, re-kick every sweep: duplicates are harmless, losses are not
        return True


@shared_task
def prune_attempts() -> int:
    cutoff = timezone.now() - timedelta(days=omnium_setting("ATTEMPT_RETENTION_DAYS"))
    deleted, _ = DeliveryAttempt.objects.filter(started_at__lt=cutoff).delete()
    return deleted
