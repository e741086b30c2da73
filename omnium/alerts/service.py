"""Opening and resolving alerts. The channels that send them are added by a later issue."""

from django.db import IntegrityError, transaction
from django.utils import timezone

from omnium.alerts.models import Alert


def open_alert(kind: str, subject: str, message: str, **details) -> Alert:
    """Open an alert, or return the one already open for this kind and subject."""
    try:
        with transaction.atomic():
            return Alert.objects.create(kind=kind, subject=subject, message=message, details=details)
    except IntegrityError:
        return Alert.objects.get(kind=kind, subject=subject, resolved_at__isnull=True)


def resolve_alert(kind: str, subject: str) -> int:
    """Resolve the open alert of this kind and subject; returns how many were resolved."""
    return Alert.objects.filter(kind=kind, subject=subject, resolved_at__isnull=True).update(
        resolved_at=timezone.now()
    )
