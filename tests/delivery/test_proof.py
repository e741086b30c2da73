"""The proof of delivery never claims more than happened: it names the exact bytes the
receiver holds, for every transport."""

import hashlib
import uuid
from datetime import timedelta

from django.utils import timezone

from omnium.conf import omnium_setting
from omnium.delivery import health, tasks
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryAttempt, DeliveryState
from omnium.feeds.models import FeedDocument
from tests.delivery.fixtures import webhook_settings


def test_proof_records_the_sha256_of_the_bytes_the_receiver_holds(kit, small_games, subscribe):
    kit.key_prefix = f"proof-{uuid.uuid4().hex[:12]}:"  # Redis: versions restart with each test database
    destination = subscribe(small_games, (kit.kind, kit.config(), kit.credentials()), transform="xml")
    document = FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar")

    assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    state = DeliveryState.objects.get(destination=destination)
    held = kit.read_back(state.sent_path)
    assert held is not None and held != bytes(document.body), "the transform changed the bytes"
    assert bytes(state.sent_bytes_sha256) == hashlib.sha256(held).digest()
    assert bytes(state.sent_hash) == bytes(document.content_hash), "the content hash stays beside it"
    assert state.sent_bytes == len(held)


def test_sweeper_closes_as_failed_an_attempt_whose_sender_died(small_games, subscribe, receiver, clean_redis):
    destination = subscribe(small_games, webhook_settings(receiver.url, send_timeout=5))
    doc_key = f"{small_games.code}/calendar"
    # What a killed worker leaves: the attempt row written before the send, and no outcome.
    abandoned = DeliveryAttempt.objects.create(destination=destination, doc_key=doc_key, seq=7)
    still_sending = DeliveryAttempt.objects.create(destination=destination, doc_key=doc_key, seq=8)
    past_any_send = 5 + omnium_setting("DELIVERY_LEASE_MARGIN_S") + 1
    DeliveryAttempt.objects.filter(pk=abandoned.pk).update(started_at=timezone.now() - timedelta(seconds=past_any_send))

    swept = tasks.sweep_deliveries()

    abandoned.refresh_from_db()
    still_sending.refresh_from_db()
    assert (abandoned.ok, abandoned.permanent, abandoned.error_class) == (False, False, "SenderLost")
    assert still_sending.ok is None, "an attempt within its deadline may still land"
    assert swept["abandoned_attempts"] == 1
    assert any(e["kind"] == "attempt_abandoned" and e["seq"] == 7 for e in health.read_events())
