import itertools

import pytest

from omnium.clients.models import Client, Destination, Subscription
from omnium.feeds.models import FeedDefinition
from tests.transports.kits import REDIS_TEST_URL, WEBHOOK_SECRET
from tests.transports.hosts import SilentHost, WebhookReceiver

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
    return "redis", {"url": REDIS_TEST_URL, "key_prefix": f"test{next(_names)}:", "send_timeout": send_timeout}, {}


def webhook_settings(url, send_timeout=5):
    return "webhook", {"url": url, "send_timeout": send_timeout, "connect_timeout": 2}, {"secret": WEBHOOK_SECRET}


@pytest.fixture
def subscribe(transactional_db):
    """subscribe(games, (kind, config, credentials), feed_types) -> a saved destination."""

    def make(games, settings, feed_types=("calendar",), client="acme", **subscription):
        kind, config, credentials = settings
        owner, _ = Client.objects.get_or_create(name=client)
        destination = Destination(client=owner, name=f"{kind}-{next(_names)}", kind=kind, config=config)
        destination.set_credentials(credentials)
        destination.full_clean()
        destination.save()
        for feed_type in feed_types:
            definition = FeedDefinition.objects.get(games=games, feed_type=feed_type)
            Subscription.objects.create(destination=destination, definition=definition, **subscription)
        return destination

    return make
