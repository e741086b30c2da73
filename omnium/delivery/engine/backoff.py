"""Back-off per destination: quick retries with jitter, then every 5 minutes, forever.

Only the failing destination waits. Its next try is due at `retry_at` in PostgreSQL, which
the sweeper reads: it kicks the destination on its first round after that moment (no timer
is held in a worker's memory, so none is lost with it). The third failure in a row
opens one alert for the destination (a permanent-looking error opens it at once and goes
straight to the slow pace); the next success resolves it.
"""

import random
import time
from datetime import timedelta
from enum import StrEnum

from django.db.models import F
from django.utils import timezone

from omnium.alerts.service import is_open, open_alert, resolve_alert
from omnium.conf import omnium_setting
from omnium.delivery import health
from omnium.delivery.models import SenderState

FAST_BASE_S = 1.0
FAST_CAP_S = 60.0
ALERT_AFTER_FAILURES = 3


class Gate(StrEnum):
    """Why a destination must not send now."""

    PAUSED = "paused"  # a person paused it
    WAITING = "waiting"  # for its next retry after a failure


def delay_after(failures: int, fast_retries: int) -> float:
    """Seconds to wait after `failures` consecutive failures."""
    if failures > fast_retries:
        return omnium_setting("DELIVERY_SLOW_RETRY_S")
    exponential = min(FAST_CAP_S, FAST_BASE_S * 2 ** (failures - 1))
    return exponential * random.uniform(0.5, 1.0)  # jitter: failing senders do not retry in step


def gate(destination_id: int) -> Gate | None:
    """Why the destination must not send now, or None."""
    row = SenderState.objects.filter(pk=destination_id).values_list("paused", "retry_at").first()
    if row is None:
        return None
    paused, retry_at = row
    if paused:
        return Gate.PAUSED
    return Gate.WAITING if retry_at is not None and retry_at > timezone.now() else None


def failed(destination, error: str, retry_after: float | None = None, permanent: bool = False) -> float:
    """Back the destination off after a failed send; returns the wait in seconds.

    A permanent-looking error (a 4xx, bad credentials, a changed host key) will not go away
    in seconds, so the destination goes red at once: the slow pace, the failing status and
    the alert. It is still retried, so a client's fix is picked up without a person."""
    SenderState.objects.filter(pk=destination.pk).update(
        consecutive_failures=F("consecutive_failures") + 1, last_error=error[:2000]
    )
    failures = SenderState.objects.filter(pk=destination.pk).values_list("consecutive_failures", flat=True).get()
    delay = omnium_setting("DELIVERY_SLOW_RETRY_S") if permanent else delay_after(failures, destination.fast_retries)
    if retry_after is not None:
        delay = max(delay, min(retry_after, omnium_setting("DELIVERY_SLOW_RETRY_S")))
    SenderState.objects.filter(pk=destination.pk).update(retry_at=timezone.now() + timedelta(seconds=delay))
    status = health.Status.FAILING if permanent else health.status_of(False, failures, destination.fast_retries)
    health.publish_status(destination.pk, status, errors=failures, backoff_s=delay)
    if failures == ALERT_AFTER_FAILURES or permanent:
        _open_failing_alert(destination, failures, error)
    return delay


def _open_failing_alert(destination, failures: int, error: str) -> None:
    subject = f"destination:{destination.pk}"
    if is_open("destination_failing", subject):
        return  # one alert per failure storm
    open_alert("destination_failing", subject, f"{destination} failed {failures} times in a row: {error}",
               destination=destination.pk, client=destination.client.name)
    health.record_event("alert_opened", destination.pk, alert="destination_failing")


def recovered(destination) -> None:
    """The first success after failures (the sender's proof statement reset the count)."""
    health.publish_status(destination.pk, health.Status.RUNNING, last_success=time.time())
    health.record_event("recovered", destination.pk)
    if resolve_alert("destination_failing", f"destination:{destination.pk}"):
        health.record_event("alert_resolved", destination.pk, alert="destination_failing")
