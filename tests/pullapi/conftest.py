import time

import pytest
import redis
from django.test import Client as HttpClient
from django.test import RequestFactory

from omnium.clients.models import ApiKey, Client, Entitlement
from omnium.delivery.engine import sender
from omnium.feeds.models import FeedDefinition
from omnium.pullapi import change_notices, failed_keys, pull_cache_destinations, read_path, throttles
from omnium.pullapi.catalogue import holder
from tests import database_snapshots
from tests.conftest import GAMES_TABLES, make_small_games, the_small_games


@pytest.fixture(autouse=True)
def _catalogue_driven_by_hand(monkeypatch):
    """In-process tests reload the catalogue themselves (no listener thread) and start with
    an empty file memory; real server processes (servers.py) listen as in production."""
    monkeypatch.setattr(change_notices, "LISTEN_FOR_CHANGES", False)
    read_path.reset()
    throttles.rates.clear()
    failed_keys.failures.clear()
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
    # The catalogue of these tables: a test that entitles no client (a staff's view) ran
    # against whatever an earlier test of this process had loaded, and 404'd when first.
    holder.reload()
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


def pull_redis_url() -> str:
    from omnium.conf import omnium_setting

    return omnium_setting("PULL_REDIS_URL")


def wait_until(condition, what: str, timeout: float = 5.0) -> float:
    """Seconds it took `condition()` to hold (polled every millisecond)."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < timeout, f"not within {timeout} s: {what}"
        time.sleep(0.001)
    return time.monotonic() - start


@pytest.fixture
def listening(games, clean_redis):
    """This process's invalidation channel, up (as every real API process has it)."""
    read_path.read_path().listen_for_invalidations(pull_redis_url())
    wait_until(lambda: read_path.read_path().invalidations.listening, "the invalidation channel is up")
    return read_path.read_path().invalidations


@pytest.fixture
def redis_commands(monkeypatch):
    """Every Redis round trip this process makes (real Redis; we only write them down)."""
    seen = []
    send = redis.Redis.execute_command
    execute = redis.client.Pipeline.execute

    def command(self, *args, **options):
        seen.append(args[0])
        return send(self, *args, **options)

    def pipeline(self, *args, **options):
        seen.append("PIPELINE")
        return execute(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", command)
    monkeypatch.setattr(redis.client.Pipeline, "execute", pipeline)
    return seen


def environ(path: str, query: dict | None = None, **headers) -> dict:
    """A WSGI environ as a server would hand it over."""
    return RequestFactory().get(path, query or {}, **headers).environ


def call(app, env: dict) -> tuple[int, dict, bytes]:
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(headers)

    body = b"".join(app(env, start_response))
    return answer["status"], answer["headers"], body
