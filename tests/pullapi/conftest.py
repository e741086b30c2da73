import pytest
from django.test import Client as HttpClient

from omnium.clients.models import ApiKey, Client, Entitlement
from omnium.delivery import sender
from omnium.feeds.models import FeedDefinition
from omnium.pullapi import pull_cache_destinations, read_path
from omnium.pullapi.catalogue import holder
from omnium.pullapi.throttles import rates
from tests import database_snapshots
from tests.conftest import GAMES_TABLES, make_small_games, the_small_games


@pytest.fixture(autouse=True)
def _catalogue_driven_by_hand(settings):
    """In-process tests reload the catalogue themselves (no listener thread) and start with
    an empty file memory; real server processes (servers.py) listen as in production."""
    settings.OMNIUM = {**settings.OMNIUM, "PULL_LISTEN_FOR_CHANGES": False}
    read_path.reset()
    rates.__init__()
    yield
    read_path.reset()


def _make_games_with_pull_cache_destinations():
    make_small_games()
    games = the_small_games()
    pull_cache_destinations.ensure_destinations(games)
    pull_cache_destinations.build_missing(games, feed_types={"calendar_day", "fixture", "unit_standings"})


@pytest.fixture
def games(transactional_db, clean_redis):
    """A small Games with its files built (careers aside: test_documents builds those) and its
    pull cache destinations set up (made once a session, then copied back). Redis starts
    empty: the read path fills it on first read; tests that need the sender's publishing call
    fill_pull_cache()."""
    database_snapshots.made_once("games_with_pull_cache_destinations", _make_games_with_pull_cache_destinations,
                                 (*GAMES_TABLES, "clients_", "delivery_"))
    return the_small_games()


def fill_pull_cache() -> None:
    """What the delivery workers do: drain every Redis destination into the pull cache."""
    from omnium.clients.models import Destination

    for destination_id in Destination.objects.filter(kind="redis").values_list("pk", flat=True):
        sender.drain(destination_id)


@pytest.fixture
def entitle():
    """entitle(client name, games, feed_type, **client's shape) -> (client, plain key)."""

    def make(name, games, *feed_types, filter="", key_fields=None, **shape):
        client, _ = Client.objects.update_or_create(name=name, defaults=shape)
        for feed_type in feed_types:
            definition = FeedDefinition.objects.get(games=games, feed_type=feed_type)
            Entitlement.objects.get_or_create(client=client, definition=definition, filter=filter)
        _, plain = ApiKey.issue(client, f"{name} key", **(key_fields or {}))
        holder.reload()
        return client, plain

    return make


@pytest.fixture
def http():
    return HttpClient()


def bearer(key: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}
