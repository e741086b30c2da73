"""Delivery fixtures shared by the delivery and operations tests: receivers and destinations."""

import itertools
import uuid

import pytest

from devtools.loopback.hosts import SilentHost, WebhookReceiver
from devtools.provisioning import provision_destination
from omnium.messaging import hints
from tests.transports.kits import REDIS_TEST_URL, WEBHOOK_SECRET

_names = itertools.count()


@pytest.fixture
def receiver():
    server = WebhookReceiver(WEBHOOK_SECRET).start()
    yield server
    server.stop()


@pytest.fixture
def silent_host():
    host = SilentHost()
    yield host
    host.stop()


def redis_destination_settings(send_timeout=5):
    # A fresh prefix each time: versions restart with every new test database, and an older
    # run's higher version would (rightly) be kept by write-if-newer.
    return "redis", {"url": REDIS_TEST_URL, "key_prefix": f"test-{uuid.uuid4().hex[:12]}:", "send_timeout": send_timeout}, {}


def webhook_settings(url, send_timeout=5):
    return "webhook", {"url": url, "send_timeout": send_timeout, "connect_timeout": 2}, {"secret": WEBHOOK_SECRET}


@pytest.fixture
def subscribe(transactional_db):
    """subscribe(games, (kind, config, credentials), feed_types) -> a saved destination."""

    def make(games, settings, feed_types=("calendar",), client="acme", **subscription):
        name = f"{settings[0]}-{next(_names)}"
        destination = provision_destination(client, name, settings, games, feed_types, **subscription)
        assert hints.wait_until_sent(), "its first kick, sent by the hint thread as after any save"
        return destination

    return make
