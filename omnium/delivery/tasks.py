"""Celery tasks of delivery: the sweeper and the pruning (beat). Drains are not tasks: a
delivery worker's consumer step takes each destination's kicks (delivery.worker.kick_consumer)."""

from datetime import timedelta

from celery import shared_task
from django.db import connection
from django.utils import timezone

from omnium.conf import omnium_setting
from omnium.delivery import health
from omnium.delivery.kicks import forget_marks, kick_all, without_a_kick_on_its_way
from omnium.delivery.models import NEWER_THAN_FAILED, DeliveryAttempt, Probe
from omnium.delivery.operations import behind_alert, probes
from omnium.delivery.worker import queues
from omnium.routing import RUN_PROBE
from omnium.transports.base import TIMEOUT_SETTINGS

NEEDS_A_KICK = """
SELECT DISTINCT ds.destination_id FROM delivery_state ds
JOIN clients_subscription s ON s.id = ds.subscription_id AND s.active
LEFT JOIN delivery_senderstate ss ON ss.destination_id = ds.destination_id
WHERE (ds.wanted_seq > ds.sent_seq OR ds.force_resend)
  AND (ss.lease_until IS NULL OR ss.lease_until < clock_timestamp())
  AND (ss.retry_at IS NULL OR ss.retry_at <= clock_timestamp() OR """ + NEWER_THAN_FAILED + """)
  AND NOT COALESCE(ss.paused, false)
  -- owed for a while: a kick sent with the work arrives within milliseconds, so younger work
  -- most likely has its kick in the queue already
  AND (ds.wanted_at < clock_timestamp() - interval '3 seconds' OR ds.force_resend)
"""

TIMERS_DUE = """
UPDATE delivery_state ds SET force_resend = true
FROM clients_subscription s
WHERE s.id = ds.subscription_id AND s.active AND s.schedule_seconds > 0 AND NOT ds.force_resend
  AND ds.sent_at < clock_timestamp() - s.schedule_seconds * interval '1 second'
"""


# An attempt still without an outcome once its deadline and the lease margin have passed
# belongs to a sender that died mid-send: no live send can still be running it (the deadline
# ends every send, and the lease has let another sender in).
CLOSE_ABANDONED_ATTEMPTS = """
UPDATE delivery_deliveryattempt a SET ok = false, permanent = false, error_class = 'SenderLost',
    error = 'no outcome recorded: the sender stopped mid-send (its worker died or was killed)'
FROM clients_destination d
WHERE d.id = a.destination_id AND a.ok IS NULL
  AND a.started_at < clock_timestamp() - (COALESCE(NULLIF(d.config->>'send_timeout', '')::float, %(default)s)
                                          + %(margin)s) * interval '1 second'
RETURNING a.destination_id, a.doc_key, a.seq
"""


def close_abandoned_attempts() -> int:
    """Record as failed the attempts whose sender died before their outcome; returns how many."""
    with connection.cursor() as cursor:
        cursor.execute(CLOSE_ABANDONED_ATTEMPTS, {"default": TIMEOUT_SETTINGS["send_timeout"].default,
                                                  "margin": omnium_setting("DELIVERY_LEASE_MARGIN_S")})
        closed = cursor.fetchall()
    for destination_id, doc_key, seq in closed:
        health.record_event("attempt_abandoned", destination_id, doc_key=doc_key, seq=seq)
    return len(closed)


@shared_task
def sweep_deliveries() -> dict:
    """The backstop (beat): timers due, destinations with owed work and no live sender,
    destinations behind, attempts their dead senders never finished, and every destination
    queue announced to the delivery workers."""
    with connection.cursor() as cursor:
        cursor.execute(TIMERS_DUE)
        timers = cursor.rowcount
        cursor.execute(NEEDS_A_KICK)
        idle = [row[0] for row in cursor.fetchall()]
    queues.announce(queues.destination_ids(), complete=True)
    kicked = _still_needing_a_kick(without_a_kick_on_its_way(idle))  # the others' kicks wait in their queues
    kick_all(kicked)
    behind = behind_alert.check_behind()
    abandoned = close_abandoned_attempts()
    return {"kicked": len(kicked), "timers_due": timers, "behind": behind, "abandoned_attempts": abandoned}


def _still_needing_a_kick(unmarked: list[int]) -> list[int]:
    """Those of these destinations (just marked as about to be kicked) that still need a kick.

    The list of idle destinations was read before their marks, and a sweep shares the
    delivery workers with the sends it oversees: in a fan-out to 5,000 destinations the two
    steps can be seconds apart. A destination drained in between has cleared its mark and
    owes nothing, yet looks unkicked; its kick would be a drain task that finds nothing.
    Read again after the marks, a destination still owed and without a live sender has no
    kick on its way."""
    if not unmarked:
        return []
    with connection.cursor() as cursor:
        cursor.execute(NEEDS_A_KICK + "  AND ds.destination_id = ANY(%s)", [unmarked])
        still = {row[0] for row in cursor.fetchall()}
    forget_marks([destination_id for destination_id in unmarked if destination_id not in still])
    return [destination_id for destination_id in unmarked if destination_id in still]


@shared_task
def prune_attempts() -> int:
    """Attempts and probes (connection tests, host-key fetches: who probed what) past their retention."""
    cutoff = timezone.now() - timedelta(days=omnium_setting("ATTEMPT_RETENTION_DAYS"))
    deleted, _ = DeliveryAttempt.objects.filter(started_at__lt=cutoff).delete()
    Probe.objects.filter(requested_at__lt=cutoff).delete()
    return deleted


@shared_task(name=RUN_PROBE)
def run_probe(probe_id: str) -> None:
    """A connection test or host-key fetch a person asked for (delivery.operations.probes)."""
    probes.run(probe_id)
