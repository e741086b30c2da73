"""The sender: drains one destination's owed files, one at a time, under its lease.

For each owed (subscription, file) it reads the file's CURRENT version (so a version that
was overtaken while it waited is never sent), renders the subscription's transform, pushes
it through the destination's transport under the hard deadline, and records the proof in one
statement that only moves `sent_seq` forward. A failure backs off this destination only.
"""

import logging
import time
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone

from omnium.clients import file_names
from omnium.clients.credentials import CredentialError
from omnium.clients.models import Destination, Subscription
from omnium.clients.transforms.base import Marks
from omnium.delivery import backoff, health, lease, rendering
from omnium.delivery.models import DeliveryAttempt, DeliveryState, DeliverySwitch
from omnium.delivery.transport_cache import transport_for
from omnium.delivery.transports import TransportError

log = logging.getLogger(__name__)

# One drain task sends for at most this long, then the next kick carries on.
DRAIN_BUDGET_S = 20.0

BUSY, OFF, IDLE, DRAINED, FAILED, LOST_LEASE = "busy", "off", "idle", "drained", "failed", "lost_lease"


@dataclass(frozen=True)
class OwedFile:
    state_id: int
    subscription_id: int
    doc_key: str


NEXT_OWED = """
SELECT ds.id, ds.subscription_id, ds.doc_key FROM delivery_state ds
JOIN clients_subscription s ON s.id = ds.subscription_id AND s.active
WHERE ds.destination_id = %s AND (ds.wanted_seq > ds.sent_seq OR ds.force_resend)
  AND ds.dead_lettered_at IS NULL
ORDER BY ds.wanted_at, ds.id LIMIT 1
"""


def next_owed(destination_id: int) -> OwedFile | None:
    with connection.cursor() as cursor:
        cursor.execute(NEXT_OWED, [destination_id])
        row = cursor.fetchone()
    return OwedFile(*row) if row else None


def drain(destination_id: int) -> str:
    """Send everything the destination is owed; returns why it stopped."""
    destination = Destination.objects.select_related("client").filter(pk=destination_id).first()
    if destination is None:
        return OFF
    token = lease.acquire(destination_id, destination.send_timeout_s)
    if token is None:
        return BUSY
    try:
        outcome = _drain_under_lease(destination, token)
    finally:
        lease.release(destination_id, token)
    # A kick that arrived while we held the lease returned at once: look again, so that no
    # wake-up is lost between our last look and the release.
    if outcome == DRAINED and next_owed(destination_id) and backoff.gate(destination_id) is None:
        from omnium.delivery.queues import kick

        kick(destination_id)
    return outcome


def _drain_under_lease(destination: Destination, token) -> str:
    destination_id = destination.pk
    if not destination.can_send() or not DeliverySwitch.is_on():
        return OFF
    sent, started = 0, time.monotonic()
    while (owed := next_owed(destination_id)) is not None:
        # Read before every file, so a pause or a back-off set elsewhere takes effect at once.
        if backoff.gate(destination_id) is not None:
            return IDLE
        if time.monotonic() - started > DRAIN_BUDGET_S:
            return DRAINED  # hand over to a fresh task (re-kicked by drain), keeping queues fair
        if sent and not lease.renew(destination_id, token, destination.send_timeout_s):
            return LOST_LEASE
        if not send_one(destination, owed):
            return FAILED
        sent += 1
    return DRAINED if sent else IDLE


def send_one(destination: Destination, owed: OwedFile) -> bool:
    """Push the current version of one owed file; True when its proof is recorded."""
    subscription = Subscription.objects.select_related("definition__games").get(pk=owed.subscription_id)
    version = rendering.current_version(owed.doc_key)
    if version is None:  # the file was removed; nothing to send
        DeliveryState.objects.filter(pk=owed.state_id).update(force_resend=False, wanted_seq=0)
        return True
    try:
        rendered = rendering.render(version, subscription.transform, _marks(subscription, version))
    except rendering.VersionMoved:
        return True  # a newer version arrived this instant; the next turn sends it
    path = file_names.render(subscription.file_name_template, subscription.definition.games.code,
                             version.feed_type, version.filter, rendered.extension)
    attempt = DeliveryAttempt.objects.create(destination=destination, subscription=subscription,
                                             doc_key=owed.doc_key, seq=version.seq)
    started = time.monotonic()
    try:
        transport = transport_for(destination)
        receipt = transport.send(rendered.body, path, content_type=rendered.content_type,
                                 version=version.seq, etag=version.content_hash.hex())
    except (TransportError, CredentialError) as exc:
        _record_failure(destination, owed, attempt, exc, started)
        return False
    age_ms = _record_proof(owed, version, rendered, receipt, path)
    _finish_attempt(attempt, started, ok=True, bytes=len(rendered.body), receipt=receipt.text, age_ms=age_ms)
    backoff.succeeded(destination)
    health.record_event("sent", destination.pk, doc_key=owed.doc_key, seq=version.seq, bytes=len(rendered.body),
                        age_ms=age_ms)
    return True


def _marks(subscription: Subscription, document) -> Marks:
    return Marks(version=document.seq if subscription.include_version else None,
                 result_status=subscription.include_result_marks)


RECORD_PROOF = """
UPDATE delivery_state SET
    sent_seq = GREATEST(sent_seq, %(seq)s), sent_hash = %(hash)s, sent_bytes = %(bytes)s,
    receipt = %(receipt)s, sent_path = %(path)s, sent_at = clock_timestamp(),
    age_ms = GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - %(changed_at)s) * 1000)::int,
    force_resend = false, last_error = '', last_attempt_at = clock_timestamp()
WHERE id = %(id)s AND (sent_seq < %(seq)s OR force_resend)
RETURNING age_ms
"""


def _record_proof(owed: OwedFile, document, rendered, receipt, path: str) -> int | None:
    """Record the proof (forward only); returns the file's age at the send, if recorded."""
    with connection.cursor() as cursor:
        cursor.execute(RECORD_PROOF, {
            "id": owed.state_id, "seq": document.seq, "hash": document.content_hash,
            "bytes": len(rendered.body), "receipt": receipt.text, "path": path, "changed_at": document.changed_at,
        })
        row = cursor.fetchone()
    return row[0] if row else None


def _record_failure(destination, owed: OwedFile, attempt, exc: Exception, started: float) -> None:
    permanent = getattr(exc, "permanent", True)
    message = str(exc)
    if backoff.gate(destination.pk) == backoff.PAUSED:
        message = f"cut by a pause: {message}"  # a person stopped it; not the destination's fault
    log.warning("send of %s to destination %s failed (%s): %s", owed.doc_key, destination.pk,
                "permanent" if permanent else "transient", message)
    _finish_attempt(attempt, started, ok=False, error_class=type(exc).__name__, error=message, permanent=permanent)
    now = timezone.now()
    DeliveryState.objects.filter(pk=owed.state_id).update(
        last_error=message, last_attempt_at=now, dead_lettered_at=now if permanent else None)
    health.record_event("dead_lettered" if permanent else "failed", destination.pk, doc_key=owed.doc_key,
                        error=message)
    if not message.startswith("cut by a pause"):
        backoff.failed(destination, message, retry_after=getattr(exc, "retry_after", None))


def _finish_attempt(attempt, started: float, **outcome) -> None:
    duration_ms = int((time.monotonic() - started) * 1000)
    DeliveryAttempt.objects.filter(pk=attempt.pk).update(duration_ms=duration_ms, **outcome)
