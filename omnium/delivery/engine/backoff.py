"""Back-off per destination: a ladder of retries, then every 5 minutes, forever.

The ladder: the destination's quick retries (1 s doubling), then a retry about every minute
until ten minutes after the first failure (counted in time, not tries: a newer version is tried
at once, and those tries must not use the ladder up), so a client back from a deploy or an outage of a few minutes gets its files
within a minute of answering again; only then the slow pace. A refusal that only a person can
mend (our login or keys refused, a changed host key, an untrusted certificate, settings that
cannot work) goes to the slow pace at once, so we do not hammer a server that refuses us (and
may ban our address for it). Every step has jitter, so failing senders do not retry in step.

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
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from omnium.alerts.service import is_open, open_alert, resolve_alert
from omnium.conf import omnium_setting
from omnium.delivery import health
from omnium.delivery.models import SenderState
from omnium.transports.failures import Reason

FAST_BASE_S = 1.0
FAST_CAP_S = 60.0
# After the quick retries, about a minute apart until this long after the first failure.
MINUTE_RETRIES_FOR_S = 600.0
ALERT_AFTER_FAILURES = 3
# Refusals that a retry within minutes cannot change: a person must act on our side or theirs.
MENDED_BY_A_PERSON = frozenset({Reason.AUTH_REFUSED, Reason.HOST_KEY_CHANGED, Reason.TLS_REFUSED,
                                Reason.INVALID_SETTINGS, Reason.ADDRESS_REFUSED})


class Gate(StrEnum):
    """Why a destination must not send now."""

    PAUSED = "paused"  # a person paused it
    WAITING = "waiting"  # for its next retry after a failure


def delay_after(failures: int, fast_retries: int, failing_for_s: float) -> float:
    """Seconds to wait after `failures` consecutive failures, the first `failing_for_s` ago:
    the ladder, then the slow pace."""
    if failures <= fast_retries:
        step = min(FAST_CAP_S, FAST_BASE_S * 2 ** (failures - 1))
    elif failing_for_s < MINUTE_RETRIES_FOR_S:
        step = FAST_CAP_S
    else:
        return omnium_setting("DELIVERY_SLOW_RETRY_S")
    return step * random.uniform(0.5, 1.0)


def gate(destination_id: int) -> Gate | None:
    """Why the destination must not send now, or None."""
    row = SenderState.objects.filter(pk=destination_id).values_list("paused", "retry_at").first()
    if row is None:
        return None
    paused, retry_at = row
    if paused:
        return Gate.PAUSED
    return Gate.WAITING if retry_at is not None and retry_at > timezone.now() else None


def failed(destination, error: str, retry_after: float | None = None, permanent: bool = False,
           reason: Reason = Reason.OTHER) -> float:
    """Back the destination off after a failed send; returns the wait in seconds.

    A permanent-looking error (a 4xx, bad credentials, a changed host key) makes the
    destination red at once: the failing status and the alert. It is retried on the ladder
    all the same (a client mid-deploy answers 403 or 404 for a minute or two), unless only a
    person can mend it (MENDED_BY_A_PERSON): then at the slow pace, still without end, so a
    fix is picked up without anyone pressing a button."""
    SenderState.objects.filter(pk=destination.pk).update(
        consecutive_failures=F("consecutive_failures") + 1, failing_since=Coalesce(F("failing_since"), Now()),
        last_error=error[:2000],
    )
    failures, since = SenderState.objects.filter(pk=destination.pk).values_list(
        "consecutive_failures", "failing_since").get()
    failing_for_s = (timezone.now() - since).total_seconds()
    slow_at_once = permanent and reason in MENDED_BY_A_PERSON
    delay = (omnium_setting("DELIVERY_SLOW_RETRY_S") if slow_at_once
             else delay_after(failures, destination.fast_retries, failing_for_s))
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
