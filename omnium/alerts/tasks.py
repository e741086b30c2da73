from celery import shared_task
from django.db import transaction

from omnium.alerts import notices
from omnium.alerts.models import Alert


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
