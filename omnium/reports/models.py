"""What the reports keep once the rows they are summed from are pruned."""

from django.db import models

from omnium.clients.models import Client


class FreshnessDay(models.Model):
    """One client's day of deliveries against the promise (95 % of changes at the client within
    10 s), summed from its proofs (delivery.operations.freshness_report) before the attempts are pruned,
    and kept OMNIUM_FRESHNESS_RETENTION_DAYS: what a client can be handed for a month or a Games."""

    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="freshness_days")
    day = models.DateField()  # UTC
    versions_sent = models.PositiveIntegerField()
    within_10s = models.PositiveIntegerField()
    within_60s = models.PositiveIntegerField()
    p50_age_ms = models.PositiveIntegerField(null=True)
    p95_age_ms = models.PositiveIntegerField(null=True)
    failures = models.PositiveIntegerField()
    # From the first failure after a success to the next success, at one destination (the day's
    # end, or now, if none came).
    longest_outage_s = models.FloatField(default=0)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["client", "day"], name="one_freshness_row_per_client_day")]
        ordering = ["client", "-day"]

    def __str__(self):
        return f"{self.client} {self.day}"

    @property
    def share_within_10s(self) -> float | None:
        return self.within_10s / self.versions_sent if self.versions_sent else None

    @property
    def share_within_60s(self) -> float | None:
        return self.within_60s / self.versions_sent if self.versions_sent else None
