from datetime import timedelta

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from omnium.alerts import notices
from omnium.alerts.models import Alert
from omnium.conf import omnium_setting


@shared_task
def send_alert_notices(alert_id: int) -> bool:
    # Lock the alert so two copies of this task never send the same notice twice.
    with transaction.atomic():
        alert = Alert.objects.select_for_update(skip_locked=True).filter(pk=alert_id).first()
        return True if alert is None else notices.send_pending(alert)


@shared_task
def sweep_alert_notices() -> int:
    """The backstop (beat): retry every notice that did not go out."""
    pending = list(notices.unsent().values_list("pk", flat=True)[:100])
    for alert_id in pending:
        send_alert_notices(alert_id)
    return len(pending)


@shared_task
def prune_resolved_alerts() -> int:
    """Delete alerts resolved more than ALERT_RETENTION_DAYS ago whose resolution notice went
    out (an open alert, or one still to be announced, is kept whatever its age)."""
    cutoff = timezone.now() - timedelta(days=omnium_setting("ALERT_RETENTION_DAYS"))
    deleted, _ = Alert.objects.filter(resolved_at__lt=cutoff, resolution_sent_at__isnull=False).delete()
    return deleted
