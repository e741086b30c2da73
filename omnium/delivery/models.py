"""Owed and sent versions per (subscription, file), the proof of delivery, and the senders' state."""

import time
import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q

from omnium.clients.models import Destination, Subscription

# SQL over delivery_state `ds`: this file is owed a version newer than the one that failed,
# so the destination's back-off does not hold it back (ARCHITECTURE rule 7).
NEWER_THAN_FAILED = "(ds.failed_seq > 0 AND ds.wanted_seq > ds.failed_seq)"


class DeliveryState(models.Model):
    """What a subscription is owed of one file, and the proof of the last send.

    Owed work coalesces: fan-out raises `wanted_seq` with GREATEST, the sender sends the file's
    current body, and `sent_seq` only moves forward. A version that was overtaken while it
    waited is simply never sent.
    """

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="states")
    destination = models.ForeignKey(Destination, on_delete=models.CASCADE, related_name="states")
    doc_key = models.TextField()
    wanted_seq = models.BigIntegerField(default=0)
    wanted_at = models.DateTimeField(null=True, blank=True)  # since when this file has been owed (behind)
    force_resend = models.BooleanField(default=False)  # the subscription's timer is due
    sent_seq = models.BigIntegerField(default=0)
    sent_hash = models.BinaryField(max_length=32, null=True)  # the content hash (body without built_at)
    sent_bytes = models.PositiveIntegerField(null=True)
    # sha256 of the exact bytes pushed (after the transform): what the client holds.
    sent_bytes_sha256 = models.BinaryField(max_length=32, null=True)
    receipt = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    age_ms = models.PositiveIntegerField(null=True, help_text="From the file's changed_at to the confirmed send.")
    sent_path = models.TextField(blank=True)
    last_error = models.TextField(blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    # When a version last failed with a permanent-looking error (bad credentials, a changed
    # host key, a 4xx): a record of what failed, replayable, cleared by the next proof. It
    # blocks nothing: the file is retried with its destination's back-off like any failure.
    dead_lettered_at = models.DateTimeField(null=True, blank=True)
    # The version whose send failed last (0: none since the last proof). The back-off holds
    # back this version only: a newer one is tried at once.
    failed_seq = models.BigIntegerField(default=0, db_default=0)  # db_default: fan-out inserts in SQL

    class Meta:
        db_table = "delivery_state"
        constraints = [
            models.UniqueConstraint(fields=["subscription", "doc_key"], name="one_state_per_subscription_file"),
        ]
        indexes = [
            # The sender's pick, in its order (wanted_at, then id): with the id in the index the
            # plan made once for every destination (the pick is a prepared statement) walks this
            # index; without it, that plan walked delivery_state_waiting through every
            # destination's owed rows and sorted them.
            models.Index(fields=["destination", "wanted_at", "id"], name="delivery_state_owed_in_order",
                         condition=Q(wanted_seq__gt=F("sent_seq")) | Q(force_resend=True)),
            # Owed work by age: the sweeper and the "behind" check look at the oldest first.
            models.Index(fields=["wanted_at"], name="delivery_state_waiting",
                         condition=Q(wanted_seq__gt=F("sent_seq")) | Q(force_resend=True)),
        ]

    @property
    def owed(self) -> bool:
        return self.wanted_seq > self.sent_seq or self.force_resend


class DeliveryAttempt(models.Model):
    """Every attempt, success or failure, for ops; pruned after OMNIUM_ATTEMPT_RETENTION_DAYS."""

    # No index of its own: the (destination, -started_at) index below serves every lookup by
    # destination, and each index is written twice per send (the attempt opens, then closes).
    destination = models.ForeignKey(Destination, on_delete=models.CASCADE, related_name="attempts", db_index=False)
    subscription = models.ForeignKey(Subscription, null=True, on_delete=models.SET_NULL, related_name="+")
    doc_key = models.TextField()
    seq = models.BigIntegerField()
    started_at = models.DateTimeField(auto_now_add=True)
    duration_ms = models.PositiveIntegerField(null=True)
    ok = models.BooleanField(null=True)  # None: still running, or its worker died mid-send
    age_ms = models.PositiveIntegerField(null=True)  # on success: file changed_at -> confirmed
    bytes = models.PositiveIntegerField(null=True)
    receipt = models.TextField(blank=True)
    error_class = models.CharField(max_length=100, blank=True)
    error = models.TextField(blank=True)
    permanent = models.BooleanField(default=False)
    # A connection test run by a person: it sent no feed file and changed no health or proof.
    is_test = models.BooleanField(default=False)
    # The Celery worker that sent (its node name, e.g. deliver@host-a): which host did the work.
    worker = models.CharField(max_length=200, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["destination", "-started_at"]), models.Index(fields=["started_at"]),
            # The sweeper looks for attempts without an outcome every few seconds.
            models.Index(fields=["started_at"], name="delivery_attempt_unfinished", condition=Q(ok__isnull=True)),
        ]


class SenderState(models.Model):
    """One row per destination: the sender's lease (one sender at a time, across all hosts)
    and its back-off. Kept in PostgreSQL, so a Redis restart cannot let two senders in."""

    destination = models.OneToOneField(Destination, primary_key=True, on_delete=models.CASCADE,
                                       related_name="sender")
    lease_token = models.UUIDField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    # The first failure of the run of failures under way (the back-off ladder's clock).
    failing_since = models.DateTimeField(null=True, blank=True)
    retry_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # Paused by a person (survives restarts): nothing is sent until resumed.
    paused = models.BooleanField(default=False)
    paused_reason = models.TextField(blank=True)
    paused_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    paused_at = models.DateTimeField(null=True, blank=True)


class DeliverySwitch(models.Model):
    """The global delivery switch (one row). Off: no sender sends; owed work waits."""

    enabled = models.BooleanField(default=True)
    reason = models.TextField(blank=True)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    changed_at = models.DateTimeField(auto_now=True)

    def clean(self):
        if not self.enabled and not self.reason.strip():
            raise ValidationError({"reason": "Say why delivery is switched off."})

    @classmethod
    def current(cls) -> "DeliverySwitch":
        """The switch as it stands (on, by nobody, if it was never touched)."""
        return cls.objects.select_related("changed_by").filter(pk=1).first() or cls(pk=1)

    @classmethod
    def is_on(cls) -> bool:
        """Read at most once a second per process: every drain asks, and a switch-off need only
        take effect within a second."""
        now = time.monotonic()
        if now >= _switch_cache[1]:
            row = cls.objects.filter(pk=1).values_list("enabled", flat=True).first()
            _switch_cache[:] = [True if row is None else row, now + 1.0]
        return _switch_cache[0]


_switch_cache = [True, 0.0]  # [enabled, valid until (monotonic)]



class Probe(models.Model):
    """A connection test or a host-key fetch a person asked for, run by a delivery worker
    (delivery.operations.probes), and what it found, for the page that shows it."""

    class Kind(models.TextChoices):
        CONNECTION_TEST = "connection_test", "connection test"
        HOST_KEY = "host_key", "host key fetch"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                     related_name="+")
    requested_at = models.DateTimeField(auto_now_add=True)
    # What is probed: a saved destination, or a host and port typed into its form.
    destination = models.ForeignKey(Destination, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    host = models.CharField(max_length=255, blank=True)
    port = models.PositiveIntegerField(null=True, blank=True)
    pinned = models.TextField(blank=True)  # the host key pinned now, to compare with the offered one
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["requested_by", "-requested_at"]),
                   models.Index(fields=["requested_at"], name="delivery_probe_unfinished",
                                condition=Q(finished_at__isnull=True))]
