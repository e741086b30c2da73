"""What a person can do to a destination: pause, resume, retry now, resend a file.

The state is kept in PostgreSQL (it survives restarts), and every action is also published
on the control channel, so that the workers react within a second: a pause cuts the
destination's send in progress (its transport's sockets are shut), a resume or a retry
kicks the sender at once.
"""

import json
import logging

from django.utils import timezone
from redis.exceptions import RedisError

from omnium import redis_keys
from omnium.clients import audit
from omnium.clients.models import Destination
from omnium.delivery import health
from omnium.delivery.kicks import kick_soon
from omnium.delivery.models import DeliveryState, SenderState
from omnium.redis_client import redis_client

log = logging.getLogger(__name__)


def _audit(by, destination_ids, message: str) -> None:
    audit.record(by, Destination.objects.filter(pk__in=destination_ids), message)


def _sender_state(destination_id: int) -> SenderState:
    state, _ = SenderState.objects.get_or_create(pk=destination_id)
    return state


def pause(destination_id: int, reason: str, by=None) -> None:
    if not reason or not reason.strip():
        raise ValueError("Say why the destination is paused.")
    SenderState.objects.filter(pk=_sender_state(destination_id).pk).update(
        paused=True, paused_reason=reason.strip(), paused_by=by, paused_at=timezone.now())
    health.publish_status(destination_id, health.Status.PAUSED)
    health.record_event("paused", destination_id, reason=reason.strip(), by=str(by or ""))
    _audit(by, [destination_id], f"Paused: {reason.strip()}")
    publish("pause", destination_id)


def resume(destination_id: int, by=None) -> None:
    SenderState.objects.filter(pk=_sender_state(destination_id).pk).update(
        paused=False, paused_reason="", paused_by=None, paused_at=None)
    _publish_status_after_resume(destination_id)
    health.record_event("resumed", destination_id, by=str(by or ""))
    _audit(by, [destination_id], "Resumed")
    publish("resume", destination_id)
    kick_soon([destination_id])


def _publish_status_after_resume(destination_id: int) -> None:
    """The status the destination really has once unpaused: running, or backing off / failing
    with its consecutive failures, as the sender would publish it."""
    state = SenderState.objects.select_related("destination").get(pk=destination_id)
    failures = state.consecutive_failures
    waits = (state.retry_at - timezone.now()).total_seconds() if state.retry_at else 0.0
    health.publish_status(destination_id, health.status_of(False, failures, state.destination.fast_retries),
                          errors=failures, backoff_s=max(0.0, waits),
                          last_success=state.last_success_at.timestamp() if state.last_success_at else None)


def retry_now(destination_id: int, by=None) -> None:
    """Forget the back-off wait (not the failure count) and try at once."""
    SenderState.objects.filter(pk=_sender_state(destination_id).pk).update(retry_at=None)
    health.record_event("retry_now", destination_id)
    _audit(by, [destination_id], "Retried now (back-off wait skipped)")
    kick_soon([destination_id])


def resend(state_ids, by=None, why: str = "Resent") -> int:
    """Send these files again (also replays dead letters), even if the client has them."""
    states = DeliveryState.objects.filter(pk__in=list(state_ids))
    rows = list(states.values_list("destination_id", "doc_key"))  # one read for the kicks and the record
    destinations = {destination_id for destination_id, _ in rows}
    count = states.update(force_resend=True, dead_lettered_at=None)
    for destination_id in destinations:
        health.record_event("resend", destination_id, files=count)
    kick_soon(destinations)
    _audit(by, destinations, f"{why}: {', '.join(sorted({doc_key for _, doc_key in rows}))}"[:1000])
    return count


def replay_dead_letters(destination_id: int, by=None) -> int:
    ids = DeliveryState.objects.filter(destination_id=destination_id, dead_lettered_at__isnull=False)
    return resend(ids.values_list("pk", flat=True), by=by, why="Dead letters replayed")


def publish(action: str, destination_id: int) -> None:
    try:
        redis_client().publish(redis_keys.CONTROL_CHANNEL, json.dumps({"action": action, "destination": destination_id}))
    except RedisError:  # the state is in PostgreSQL; the sender reads it before every file
        log.warning("control message %s for %s not published", action, destination_id, exc_info=True)
