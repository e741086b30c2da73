"""Sending an alert's notices: the opening once, and the resolution once, on every channel.

A notice is marked sent only when every channel took it; until then the sweeper retries, so
a channel that is down delays notices and never blocks delivery.
"""

import logging

from django.db.models import F, Q
from django.utils import timezone

from omnium.alerts.channels import ChannelError, Notice, configured_channels
from omnium.alerts.models import Alert
from omnium.safe_errors import safe_error_text

log = logging.getLogger(__name__)


def notice_for(alert: Alert, resolved: bool) -> Notice:
    state = "RESOLVED" if resolved else "OPEN"
    text = alert.message if not resolved else f"Resolved at {alert.resolved_at:%Y-%m-%d %H:%M:%S} UTC: {alert.message}"
    return Notice(f"[Omnium] {state} {alert.kind}: {alert.subject}", text)


def send_pending(alert: Alert) -> bool:
    """Send what this alert still owes (opening, then resolution); True if nothing is left."""
    try:
        if alert.opening_sent_at is None:
            _send_everywhere(notice_for(alert, resolved=False))
            Alert.objects.filter(pk=alert.pk).update(opening_sent_at=timezone.now())
        if alert.resolved_at is not None and alert.resolution_sent_at is None:
            _send_everywhere(notice_for(alert, resolved=True))
            Alert.objects.filter(pk=alert.pk).update(resolution_sent_at=timezone.now())
    except ChannelError as exc:
        error = safe_error_text(exc)  # a Slack URL's path is its password
        Alert.objects.filter(pk=alert.pk).update(send_attempts=F("send_attempts") + 1, last_send_error=error)
        log.warning("alert %s not sent yet: %s", alert.pk, error)
        return False
    return True


def _send_everywhere(notice: Notice) -> None:
    for channel in configured_channels():
        channel.send(notice)


def unsent():
    """Alerts with a notice still owed."""
    return Alert.objects.filter(Q(opening_sent_at__isnull=True) | Q(resolved_at__isnull=False, resolution_sent_at__isnull=True))
