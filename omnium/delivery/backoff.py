"""Back-off per destination: quick retries with jitter, then every 5 minutes, forever.

Only the failing destination waits; its retry is a countdown kick on its own queue, and the
sweeper re-kicks it when `retry_at` passes if that kick was lost.
"""

import random
from datetime import timedelta

from django.db.models import F
from django.utils import timezone

from omnium.conf import omnium_setting
from omnium.delivery.models import SenderState

FAST_BASE_S = 1.0
FAST_CAP_S = 60.0


def delay_after(failures: int, fast_retries: int) -> float:
    """Seconds to wait after `failures` consecutive failures."""
    if failures > fast_retries:
        return omnium_setting("DELIVERY_SLOW_RETRY_S")
    exponential = min(FAST_CAP_S, FAST_BASE_S * 2 ** (failures - 1))
    return exponential * random.uniform(0.5, 1.0)  # jitter: failing senders do not retry in step


def ready(destination_id: int) -> bool:
    retry_at = SenderState.objects.filter(pk=destination_id).values_list("retry_at", flat=True).first()
    return retry_at is None or retry_at <= timezone.now()


def failed(destination, error: str, retry_after: float | None = None) -> float:
    SenderState.objects.filter(pk=destination.pk).update(
        consecutive_failures=F("consecutive_failures") + 1, last_error=error[:2000]
    )
    failures = SenderState.objects.filter(pk=destination.pk).values_list("consecutive_failures", flat=True).get()
    delay = delay_after(failures, destination.fast_retries)
    if retry_after is not None:
        delay = max(delay, min(retry_after, omnium_setting("DELIVERY_SLOW_RETRY_S")))
    SenderState.objects.filter(pk=destination.pk).update(retry_at=timezone.now() + timedelta(seconds=delay))
    from omnium.delivery.queues import kick

    kick(destination.pk, countdown=delay)
    return delay


def succeeded(destination_id: int) -> None:
    SenderState.objects.filter(pk=destination_id).exclude(consecutive_failures=0, retry_at=None).update(
        consecutive_failures=0, retry_at=None, last_error=""
    )
    SenderState.objects.filter(pk=destination_id).update(last_success_at=timezone.now())
