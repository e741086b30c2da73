"""Errors are stored and shown without secrets: a webhook's or Slack's token sits in its URL
path or query, and a far side may echo anything in its reason phrase or body."""

import logging
import uuid

import pytest
from django.db import connection
from django.test import override_settings

from devtools.loopback.hosts import QuietHandler, serve_http
from devtools.processes import free_port
from omnium.alerts.models import Alert
from omnium.delivery import health
from omnium.delivery.models import DeliveryAttempt, DeliveryState, SenderState
from omnium.safe_errors import safe_error_text
from omnium.transports import TransportError
from tests.delivery.fixtures import webhook_settings
from tests.operations.test_retries_and_alerts import FAST_CLOCK, send_notices, try_again

SECRET = f"tok{uuid.uuid4().hex}"


class LeakyHost:
    """Answers every POST 500, with the secret in its reason phrase and its body."""

    def __init__(self):
        class Handler(QuietHandler):
            def do_POST(self):
                self.read_body()
                self.send_response(500, f"Broken {SECRET}")
                body = f"stack trace: token={SECRET}".encode()
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.http = serve_http(Handler)
        self.port = self.http.server_address[1]

    def url(self, port=None, with_user=False) -> str:
        """A URL with the secret in its path and query (and, for the Slack URL, its user part:
        a destination's config refuses that, pointing to the credentials field)."""
        user = f"user:{SECRET}@" if with_user else ""
        return f"http://{user}127.0.0.1:{port or self.port}/hooks/{SECRET}?token={SECRET}"


@pytest.fixture
def leaky_host():
    host = LeakyHost()
    yield host
    host.http.shutdown()


def stored_rows(*models) -> str:
    with connection.cursor() as cursor:
        texts = []
        for model in models:
            cursor.execute(f"SELECT t::text FROM {model._meta.db_table} t")
            texts += [row[0] for row in cursor.fetchall()]
    return "\n".join(texts)


@override_settings(OMNIUM=FAST_CLOCK)
def test_a_secret_in_a_url_a_reason_or_a_body_is_stored_nowhere(small_games, subscribe, leaky_host, caplog):
    refusing = subscribe(small_games, webhook_settings(leaky_host.url()), fast_retries=1)
    unreachable = subscribe(small_games, webhook_settings(leaky_host.url(port=free_port())), fast_retries=1)
    caplog.set_level(logging.INFO)
    with override_settings(OMNIUM_ALERT_SLACK_URL=leaky_host.url(with_user=True), OMNIUM_ALERT_EMAILS=[]):
        for _ in range(3):
            try_again(refusing)
            try_again(unreachable)
        send_notices()

    stored = stored_rows(DeliveryAttempt, DeliveryState, SenderState, Alert)
    events = str(health.read_events())
    assert Alert.objects.filter(kind="destination_failing").count() == 2
    assert Alert.objects.exclude(last_send_error="").count() == 2, "the Slack failure was recorded"
    for place, text in (("database", stored), ("event log", events), ("log", caplog.text)):
        assert SECRET not in text, place
    assert "host=127.0.0.1 status=500: webhook answered 500 Internal Server Error" in stored
    assert "ConnectionError" in stored or "unreachable" in stored
    assert "SlackChannel" not in stored and "ChannelError host=127.0.0.1 status=500: slack: HTTP 500" in stored


@pytest.mark.parametrize("message", [
    f"webhook unreachable: HTTPConnectionPool(host='hooks.example.com', port=443): Max retries exceeded "
    f"with url: /services/T0/{SECRET}?token={SECRET} (Caused by NewConnectionError)",
    f"webhook url unusable: Invalid URL 'https://ops:{SECRET}@hooks.example.com/in/{SECRET}#{SECRET}'",
    f"S3 unreachable: Could not connect to the endpoint URL: \"http://s3.example.com:9000/bucket/{SECRET}.json\"",
])
def test_safe_error_text_keeps_class_host_and_reason_but_no_path_query_or_credentials(message):
    text = safe_error_text(TransportError(message))
    assert SECRET not in text
    assert text.startswith("TransportError host=") and "example.com" in text
    assert len(text) < 250


def test_safe_error_text_keeps_the_status_and_cuts_a_long_reason():
    text = safe_error_text(TransportError("webhook answered 503 Service Unavailable " + "x" * 500, status=503))
    assert text.startswith("TransportError status=503: webhook answered 503 Service Unavailable")
    assert len(text) < 200 and text.endswith("…")
