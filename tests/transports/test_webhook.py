"""Webhooks: Standard Webhooks signing, and what each reply status means."""

from __future__ import annotations

import email.utils
import time

import pytest

from omnium.transports import TransportError
from omnium.transports.webhook import retry_after, sign, verify_signature

from .kits import WEBHOOK_SECRET, feed_path


def test_receiver_verifies_the_signature(webhook_kit, webhook_receiver):
    body = b'{"medals": []}'

    webhook_kit.send(webhook_kit.transport(), body, feed_path())

    delivery = webhook_receiver.deliveries[-1]
    assert delivery.verified
    assert verify_signature(WEBHOOK_SECRET, delivery.headers, delivery.body)
    assert delivery.body == body


def test_tampered_body_or_wrong_secret_fails_verification():
    headers = _signed_headers(b"original", timestamp=int(time.time()))

    assert verify_signature(WEBHOOK_SECRET, headers, b"original")
    assert not verify_signature(WEBHOOK_SECRET, headers, b"tampered")
    assert not verify_signature("whsec_" + "QkJCQkJCQkJCQkJCQkJCQkJCQkJC", headers, b"original")


def test_stale_timestamp_fails_verification():
    headers = _signed_headers(b"body", timestamp=int(time.time()) - 301)

    assert not verify_signature(WEBHOOK_SECRET, headers, b"body")


def test_retries_of_one_version_share_a_message_id(webhook_kit, webhook_receiver):
    transport, path = webhook_kit.transport(), feed_path()

    webhook_kit.send(transport, b"{}", path, version=41)
    webhook_kit.send(transport, b"{}", path, version=41)
    webhook_kit.send(transport, b"{}", path, version=42)

    first, again, newer = (d.headers["webhook-id"] for d in webhook_receiver.deliveries[-3:])
    assert first == again != newer


@pytest.mark.parametrize(
    ("status", "headers", "permanent", "waits"),
    [
        (410, {}, True, None),
        (400, {}, True, None),
        (302, {"location": "/elsewhere"}, True, None),
        (500, {}, False, None),
        (429, {"retry-after": "3600"}, False, 300.0),
        (503, {"retry-after": "0"}, False, 1.0),
        (503, {"retry-after": "20"}, False, 20.0),
    ],
)
def test_reply_status_decides_permanent_or_transient(
    webhook_kit, webhook_receiver, status, headers, permanent, waits
):
    webhook_receiver.replies.append((status, headers))

    with pytest.raises(TransportError) as failure:
        webhook_kit.send(webhook_kit.transport(), b"{}", feed_path())

    assert failure.value.permanent is permanent
    assert failure.value.retry_after == waits


def test_retry_after_reads_an_http_date():
    in_a_minute = email.utils.formatdate(time.time() + 60, usegmt=True)

    assert 55 <= retry_after(in_a_minute) <= 60
    assert retry_after("soon") is None


def _signed_headers(body: bytes, timestamp: int) -> dict[str, str]:
    return {
        "Webhook-Id": "msg_1",
        "Webhook-Timestamp": str(timestamp),
        "Webhook-Signature": "v1,bm90LWl0 " + sign(WEBHOOK_SECRET, "msg_1", timestamp, body),
    }
