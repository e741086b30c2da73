"""Alerts a person must see. One open alert per (kind, subject): a failure storm is one row."""

from django.db import models
from django.db.models import Q


class Alert(models.Model):
    kind = models.CharField(max_length=40)  # stat_job_failed, build_failing, destination_failing, destination_behind
    subject = models.CharField(max_length=200)  # what it is about, e.g. "destination:12"
    message = models.TextField()
    details = models.JSONField(default=dict, blank=True)
    opened_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    # Sending is separate from opening: a channel that is down delays the notice, never the
    # delivery that raised it. The sweeper re-sends what is not yet notified.
    opening_sent_at = models.DateTimeField(null=True, blank=True)
    resolution_sent_at = models.DateTimeField(null=True, blank=True)
    # The channels that took each notice ({"opened": ["slack", …], "resolved": […]}): a retry
    # goes only to those still owed it.
    notified = models.JSONField(default=dict, blank=True)
    send_attempts = models.PositiveIntegerField(default=0)
    last_send_error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "subject"],
                condition=Q(resolved_at__isnull=True),
                name="one_open_alert_per_subject",
            ),
        ]

    def __str__(self):
        return f"{self.kind}: {self.subject}"


class WorkerHeartbeat(models.Model):
    """A Celery worker saying it is alive, and which lanes (queues) it consumes. Written by
    every worker every OMNIUM_HEARTBEAT_INTERVAL_S (alerts.worker_heartbeats); read by the
    dead-man's switch, which runs in beat and so does not depend on any worker."""

    hostname = models.CharField(max_length=200, primary_key=True)
    queues = models.JSONField(default=list)
    beat_at = models.DateTimeField()

    def __str__(self):
        return self.hostname
