"""The reports' beat tasks (routed to the bulk lane: a report never waits beside a send)."""

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from omnium.conf import omnium_setting
from omnium.reports import freshness
from omnium.reports.models import FreshnessDay


@shared_task
def summarize_freshness() -> int:
    """Today's and yesterday's freshness per client, every hour: a day is final long before its
    attempts are pruned (OMNIUM_ATTEMPT_RETENTION_DAYS, 7 by default)."""
    return freshness.summarize_recent()


@shared_task
def prune_freshness_days() -> int:
    cutoff = timezone.now().date() - timedelta(days=omnium_setting("FRESHNESS_RETENTION_DAYS"))
    deleted, _ = FreshnessDay.objects.filter(day__lt=cutoff).delete()
    return deleted
