"""Webhooks: Standard Webhooks signing, and what each reply status means."""

from __future__ import annotations

import email.utils
import hashlib
import ssl
import time
from types import SimpleNamespace

import pytest

from devtools.loopback.hosts import ScriptedReplyHost, WebhookReceiver
from devtools.loopback.servers import write_self_signed
from omnium.transports import TransportError
from omnium.transports.webhook import (
    WebhookTransport,
    file_headers_signed,
    retry_after,
    sign,
    verify_signature,
)

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


def test_the_version_and_path_headers_are_those_the_signed_id_names(webhook_kit, webhook_receiver):
    webhook_kit.send(webhook_kit.transport(), b'{"medals": []}', feed_path(), version=41)
    sent = webhook_receiver.deliveries[-1].headers
    assert verify_signature(WEBHOOK_SECRET, sent, webhook_receiver.deliveries[-1].body)
    assert file_headers_signed(sent) and sent["omnium-version"] == "41"

    for name, forged in (("omnium-version", "99"), ("omnium-path", "ag1/other.json"), ("omnium-version", "41 ")):
        assert not file_headers_signed({**sent, name: forged}), name


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


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/pl",
        b"HTTP/1.1 204 No Content\r\nX-Request-Id: req-",
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly 19 bytes of it",
    ],
    ids=["after-status-line", "inside-a-header", "no-content-cut", "short-body"],
)
def test_reply_that_ends_early_is_a_transient_failure(webhook_kit, reply):
    host = ScriptedReplyHost(reply)
    try:
        with pytest.raises(TransportError) as failure:
            webhook_kit.send(webhook_kit.transport(**webhook_kit.aimed_at(host.port)), b"{}", feed_path())
    finally:
        host.stop()

    assert not failure.value.permanent, str(failure.value)


@pytest.mark.parametrize(
    ("reply", "receipt"),
    [
        (b"HTTP/1.1 202 Accepted\r\nX-Request-Id: req-7\r\nETag: \"v9\"\r\nContent-Length: 0\r\n\r\n",
         '202 Accepted; x-request-id=req-7; etag="v9"; empty body'),
        (b"HTTP/1.1 204 No Content\r\n\r\n", "204 No Content; empty body"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
         "200 OK; body 2 bytes sha256:" + hashlib.sha256(b"ok").hexdigest()),
    ],
    ids=["request-id-and-etag", "no-content", "a-body"],
)
def test_receipt_records_what_the_receiver_said(webhook_kit, reply, receipt):
    host = ScriptedReplyHost(reply)
    try:
        got = webhook_kit.send(webhook_kit.transport(**webhook_kit.aimed_at(host.port)), b"{}", feed_path())
    finally:
        host.stop()

    assert got.text == receipt


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


NEW_SECRET = "whsec_" + "TmV3U2VjcmV0TmV3U2VjcmV0TmV3U2VjcmV0"


def test_while_a_secret_rotates_both_sign_so_a_receiver_on_either_verifies(webhook_kit, webhook_receiver):
    """Issue 33: the old secret signs beside the new one until its overlap ends (Standard
    Webhooks: several space-separated signatures, a receiver accepts any it can verify)."""
    rotating = {"secret": NEW_SECRET, "previous_secret": WEBHOOK_SECRET, "previous_secret_until": time.time() + 60}

    webhook_kit.send(webhook_kit.transport(credentials=rotating), b'{"rotating": 1}', feed_path())

    sent = webhook_receiver.deliveries[-1]
    assert sent.verified  # the receiver still on the old secret takes it
    assert verify_signature(NEW_SECRET, sent.headers, sent.body)  # and one already on the new
    assert len(sent.headers["webhook-signature"].split()) == 2


def test_once_the_overlap_ends_only_the_new_secret_signs(webhook_kit, webhook_receiver):
    ended = {"secret": NEW_SECRET, "previous_secret": WEBHOOK_SECRET, "previous_secret_until": time.time() - 1}

    with pytest.raises(TransportError, match="401"):  # the loopback receiver holds the old secret
        webhook_kit.send(webhook_kit.transport(credentials=ended), b'{"rotated": 1}', feed_path())

    assert not webhook_receiver.deliveries[-1].verified


def _received_headers(receiver) -> dict[str, str]:
    return {name.lower(): value for name, value in receiver.deliveries[-1].headers.items()}


def test_a_receivers_gateway_gets_its_headers_and_its_bearer_token(webhook_kit, webhook_receiver):
    """Issue 33: receivers behind an API gateway want their own headers and authentication."""
    transport = webhook_kit.transport(
        headers="X-Feed-Client: ndtv\n\nX-Region: eu-west-1",
        credentials={**webhook_kit.credentials(), "secret_headers": "X-Api-Key: k-123", "bearer_token": "tok.en-1"})

    webhook_kit.send(transport, b'{"gateway": 1}', feed_path())

    got = _received_headers(webhook_receiver)
    assert webhook_receiver.deliveries[-1].verified
    assert (got["x-feed-client"], got["x-region"], got["x-api-key"]) == ("ndtv", "eu-west-1", "k-123")
    assert got["authorization"] == "Bearer tok.en-1"


def test_basic_authentication_reaches_the_receiver(webhook_kit, webhook_receiver):
    transport = webhook_kit.transport(basic_username="feeds",
                                      credentials={**webhook_kit.credentials(), "basic_password": "pa:ss"})

    webhook_kit.send(transport, b'{"basic": 1}', feed_path())

    assert _received_headers(webhook_receiver)["authorization"] == "Basic ZmVlZHM6cGE6c3M="  # feeds:pa:ss


@pytest.mark.parametrize("config, credentials, refusal", [
    ({"headers": "no colon here"}, {}, "is not 'Name: value'"),
    ({"headers": "Webhook-Signature: v1,forged"}, {}, "Webhook-Signature is set by Omnium"),
    ({}, {"secret_headers": "Content-Type: text/plain"}, "Content-Type is set by Omnium"),
    ({"headers": "Bad Name: x"}, {}, "is not 'Name: value'"),
    ({"basic_username": "feeds"}, {"bearer_token": "t"}, "both set the Authorization header"),
    ({"headers": "Authorization: Token x"}, {"bearer_token": "t"}, "both set the Authorization header"),
    ({"basic_username": "feeds"}, {}, "needs both the user name and the password"),
    ({}, {"bearer_token": "two words"}, "bearer_token must be one line without spaces"),
])
def test_headers_and_authentication_that_cannot_work_are_refused_plainly(webhook_kit, config, credentials, refusal):
    with pytest.raises(TransportError, match=refusal) as refused:
        webhook_kit.transport(**config, credentials={**webhook_kit.credentials(), **credentials})

    assert refused.value.permanent


@pytest.fixture
def mutual_tls_receiver(tmp_path):
    """An HTTPS receiver with a certificate of its own CA that asks every sender for a client
    certificate signed by the client CA it was given."""
    server_dir, client_dir = tmp_path / "server", tmp_path / "client"
    server_dir.mkdir(), client_dir.mkdir()
    server_ca = write_self_signed(server_dir)
    client_cert = write_self_signed(client_dir, ("omnium-client.example",))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(server_dir / "tls.crt", server_dir / "tls.key")
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=client_cert)
    receiver = WebhookReceiver(WEBHOOK_SECRET, tls=context).start()
    yield SimpleNamespace(receiver=receiver, server_ca=server_ca, client_cert=client_cert,
                          client_key=(client_dir / "tls.key").read_text())
    receiver.stop()


def test_mutual_tls_presents_our_client_certificate_to_a_receiver_of_its_own_ca(mutual_tls_receiver):
    """Issue 33: a receiver that asks for a client certificate, with a CA of its own."""
    tls = mutual_tls_receiver
    transport = WebhookTransport({"url": tls.receiver.url, "ca_cert": tls.server_ca, "client_cert": tls.client_cert},
                                 {"secret": WEBHOOK_SECRET, "client_key": tls.client_key})

    transport.send(b'{"mtls": 1}', feed_path(), content_type="application/json", version=1, etag="e")

    delivery = tls.receiver.deliveries[-1]
    assert delivery.verified and delivery.body == b'{"mtls": 1}'
    subject = dict(pair for part in delivery.client_certificate["subject"] for pair in part)
    assert subject["commonName"] == "omnium test omnium-client.example"
    transport.close()


def test_without_the_client_certificate_or_the_receivers_ca_nothing_is_delivered(mutual_tls_receiver):
    tls = mutual_tls_receiver
    settings = [({"ca_cert": tls.server_ca}, {}, "webhook unreachable"),  # the receiver hangs up on us
                ({"client_cert": tls.client_cert}, {"client_key": tls.client_key}, "certificate")]
    for config, credentials, failure in settings:
        transport = WebhookTransport({"url": tls.receiver.url, **config}, {"secret": WEBHOOK_SECRET, **credentials})
        with pytest.raises(TransportError, match=failure):
            transport.send(b"{}", feed_path(), content_type="application/json", version=2, etag="e")
        transport.close()
    assert tls.receiver.deliveries == []


@pytest.mark.parametrize("config, credentials, refusal", [
    ({"client_cert": "not a certificate"}, {"client_key": "x"}, "client_cert must be a PEM certificate"),
    ({"client_cert": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"}, {},
     "needs both the client certificate and its private key"),
])
def test_a_client_certificate_that_cannot_work_is_refused_plainly(config, credentials, refusal):
    with pytest.raises(TransportError, match=refusal):
        WebhookTransport({"url": "https://127.0.0.1:9/feeds", **config}, {"secret": WEBHOOK_SECRET, **credentials})
