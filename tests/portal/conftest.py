"""The portal's tests' fixtures: two clients, each with a webhook destination that has received
its calendar, and a browser that opened a portal link."""

from datetime import timedelta

import pytest
from django.test import Client as Browser

from omnium.clients.models import Client
from omnium.delivery.engine import sender
from tests.delivery.fixtures import webhook_settings

WEEK = timedelta(days=7)


@pytest.fixture
def two_clients_served(small_games, subscribe, receiver):
    """acme and rival, each with a webhook destination that has received the calendar; rival's
    file carries its version, so the two clients hold different bytes."""
    acme = subscribe(small_games, webhook_settings(receiver.url), client="acme", file_name_template="acme/{games}/{name}.{ext}")
    rival = subscribe(small_games, webhook_settings(receiver.url), client="rival", file_name_template="rival/{games}/{name}.{ext}")
    Client.objects.filter(name="rival").update(include_version=True)
    for destination in (acme, rival):
        assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    return acme, rival


def opened(link_token: str) -> Browser:
    browser = Browser()
    answer = browser.get(f"/portal/open/{link_token}/")
    assert answer.status_code == 302 and answer["Location"] == "/portal/"
    return browser


