"""Sending an alert's notices: the opening once, and the resolution once, on every channel.

Each channel that took a notice is recorded on the alert (`notified`), and a notice is marked
sent only when every configured channel took it; until then the sweeper retries the channels
still owed it, and only those. So a channel that is down delays its own notices, never another
channel's (a pager still pages while Slack is down), never delivery, and a channel that took a
notice never gets it twice.
"""

import logging

from django.db.models import F, Q
from django.utils import timezone

from omnium.alerts.channels import ChannelError, Notice, configured_channels
from omnium.alerts.models import Alert
from omnium.safe_errors import safe_error_text

log = logging.getLogger(__name__)

# How urgent each kind is, for the pagers: a file no one can build or a lane without a worker
# stops every client; one destination failing stops one.
SEVERITY = {"build_failing": "critical", "no_worker": "critical", "destination_failing": "error",
            "stat_job_failed": "error", "destination_behind": "warning"}
OPENED, RESOLVED = "opened", "resolved"


def notice_for(alert: Alert, resolved: bool) -> Notice:
    state = "RESOLVED" if resolved else "OPEN"
    text = alert.message if not resolved else f"Resolved at {alert.resolved_at:%Y-%m-%d %H:%M:%S} UTC: {alert.message}"
    at = alert.resolved_at if resolved else alert.opened_at
    return Notice(f"[Omnium] {state} {alert.kind}: {alert.subject}", text, key=f"omnium-alert-{alert.pk}",
                  kind=alert.kind, subject=alert.subject, resolved=resolved,
                  severity=SEVERITY.get(alert.kind, "error"), at=at.isoformat() if at else "",
                  details={k: v for k, v in (alert.details or {}).items() if isinstance(v, str | int | float)})


def send_pending(alert: Alert) -> bool:
    """Send what this alert still owes (opening, then resolution) to every channel that has not
    taken it yet; True if nothing is left."""
    if alert.opening_sent_at is None:
        if not _send_everywhere(alert, OPENED):
            return False
        Alert.objects.filter(pk=alert.pk).update(opening_sent_at=timezone.now())
    if alert.resolved_at is not None and alert.resolution_sent_at is None:
        if not _send_everywhere(alert, RESOLVED):
            return False
        Alert.objects.filter(pk=alert.pk).update(resolution_sent_at=timezone.now())
    return True


def _send_everywhere(alert: Alert, stage: str) -> bool:
    notice = notice_for(alert, resolved=stage == RESOLVED)
    notified = dict(alert.notified or {})
    took = list(notified.get(stage, []))
    errors = []
    for channel in configured_channels():
        if channel.name in took:
            continue
        try:
            channel.send(notice)
        except ChannelError as exc:
            errors.append(safe_error_text(exc))  # a Slack URL's path is its password
            continue
        took.append(channel.name)
        notified[stage] = took
        Alert.objects.filter(pk=alert.pk).update(notified=notified)  # at once: a crash cannot send it twice
    alert.notified = notified
    if errors:
        error = "; ".join(errors)
        Alert.objects.filter(pk=alert.pk).update(send_attempts=F("send_attempts") + 1, last_send_error=error)
        log.warning("alert %s not sent everywhere yet: %s", alert.pk, error)
        return False
    return True


def unsent():
    """Alerts with a notice still owed."""
    return Alert.objects.filter(Q(opening_sent_at__isnull=True) | Q(resolved_at__isnull=False, resolution_sent_at__isnull=True))
