"""Opening and resolving alerts; the notices go out through the channels afterwards."""

from django.db import IntegrityError, transaction
from django.utils import timezone

from omnium.alerts.models import Alert
from omnium.messaging import hints


def open_alert(kind: str, subject: str, message: str, **details) -> Alert | None:
    """Open an alert, or return the one already open for this kind and subject (no storm).

    None when another process opened it and resolved it again in between (two sweeps that
    overlap): its condition was over a moment ago, and the next look opens it again if it
    is back."""
    try:
        with transaction.atomic():
            alert = Alert.objects.create(kind=kind, subject=subject, message=message, details=details)
    except IntegrityError:
        return Alert.objects.filter(kind=kind, subject=subject, resolved_at__isnull=True).first()
    transaction.on_commit(lambda: _notify_soon(alert.pk))
    return alert


def is_open(kind: str, subject: str) -> bool:
    return Alert.objects.filter(kind=kind, subject=subject, resolved_at__isnull=True).exists()


def resolve_alert(kind: str, subject: str) -> int:
    """Resolve the open alert of this kind and subject (its resolution is sent too)."""
    ids = list(Alert.objects.filter(kind=kind, subject=subject, resolved_at__isnull=True).values_list("pk", flat=True))
    if not ids:
        return 0
    resolved = Alert.objects.filter(pk__in=ids, resolved_at__isnull=True).update(resolved_at=timezone.now())
    for alert_id in ids:
        transaction.on_commit(lambda a=alert_id: _notify_soon(a))
    return resolved


def _notify_soon(alert_id: int) -> None:
    from omnium.alerts.tasks import send_alert_notices

    # Without the broker the alert sweeper sends the notices later (the alert is a row).
    hints.send_soon("an alert notice", lambda: send_alert_notices.delay(alert_id))
