"""Local alert channels: an SMTP server (aiosmtpd) and a Slack-compatible webhook receiver."""

import json

import pytest
from aiosmtpd.controller import Controller
from django.test import override_settings

from devtools.loopback.hosts import QuietHandler, serve_http
from devtools.processes import free_port


class MailBox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(envelope.content.decode(errors="replace"))
        return "250 OK"


class SlackReceiver:
    def __init__(self):
        self.posts = []
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self):
                receiver.posts.append(json.loads(self.read_body()))
                self.answer()

        self.http = serve_http(Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/hooks/omnium"


@pytest.fixture
def alert_channels():
    """Real SMTP and HTTP receivers, and settings that point the alert channels at them."""
    mailbox, port = MailBox(), free_port()
    smtp = Controller(mailbox, hostname="127.0.0.1", port=port)
    smtp.start()
    slack = SlackReceiver()
    with override_settings(OMNIUM_ALERT_SLACK_URL=slack.url, OMNIUM_ALERT_EMAILS=["ops@example.org"],
                           EMAIL_HOST="127.0.0.1", EMAIL_PORT=port,
                           EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend"):
        yield slack, mailbox
    smtp.stop()
    slack.http.shutdown()
