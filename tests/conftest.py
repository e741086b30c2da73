"""Fixtures every test package may use, and the two tiers of the suite.

`make test-fast` runs the tests that start no process and need no broker (`-m "not worker and
not servers and not broker"`); `make test` runs everything. A test that starts a Celery process
is marked `worker`, one that starts a server process (loopback servers, API servers, a browser)
`servers`, one that publishes to RabbitMQ and looks at what arrived `broker`. A test in the
fast tier that tries to start a process fails and says which mark it needs; one that needs the
broker finds none there (the fast tier's Celery is given a port that refuses), so the fast tier
passes with RabbitMQ stopped.
"""

import socket

import pytest
from celery import current_app
from django.conf import settings
from django.test import TransactionTestCase

from devtools import broker, processes
from omnium.redis_client import redis_client
from omnium.routing import BULK_QUEUES, LIVE_QUEUES
from omnium.staff import sign_in_budget
from tests import child_processes, database_snapshots

pytest_plugins = ["tests.delivery.fixtures", "tests.transports.fixtures"]

ALL_QUEUES = LIVE_QUEUES + BULK_QUEUES
PROCESS_MARKS = ("worker", "servers")
BROKER_MARKS = (*PROCESS_MARKS, "broker")  # tests that need this run's broker vhost
# Fixtures that start Celery processes: a test using one is marked `worker` automatically.
WORKER_FIXTURES = {"worker", "beat", "pipeline", "delivery_worker"}
# Fixtures that need the machine's RabbitMQ: a test using one is marked `broker` automatically.
BROKER_FIXTURES = {"amqp_broker", "amqp_kit"}


def pytest_configure(config):
    assert not settings.REDIS_URL.endswith("/0"), "run tests through `make test` (REDIS_URL=.../15)"
    TransactionTestCase._fixture_teardown = _empty_every_table
    # Every admin test makes a user; a real hash costs tens of milliseconds each time. Only
    # tests/console/test_password_storage.py is about hashing (with the product's hashers);
    # the fast hasher checks a password the same way.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_collection_finish(session):
    """A broker vhost for a run that selected a test needing one; otherwise no broker at all."""
    if not _runs_tests(session.config):
        return
    if any(item.get_closest_marker(mark) for item in session.items for mark in BROKER_MARKS):
        _broker_of_this_run()
    else:
        _no_broker()


def _runs_tests(config) -> bool:
    """False in pytest-xdist's controller, which hands the tests to its workers and runs none:
    it would empty the vhost of a run without xdist (a test run alone meanwhile lost its queues)."""
    return hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)


def _broker_of_this_run():
    """RabbitMQ: a vhost named after the test database, emptied, for this process and the
    workers it starts (child_processes passes the URL on), so that no kick of another run or
    of the demo reaches them."""
    url = broker.with_vhost(settings.CELERY_BROKER_URL, child_processes.database_of_this_run())
    broker.ensure_vhost(settings.CELERY_BROKER_MANAGEMENT_URL, url, fresh=True)
    settings.CELERY_BROKER_URL = url
    current_app.conf.broker_url = url


_refusing: socket.socket | None = None


def _no_broker():
    """Celery pointed at a loopback port that is bound and never listens, so every connection
    is refused at once: whatever a fast-tier test publishes meets the outage path (the hint
    thread drops it, as in production), whether RabbitMQ runs on this machine or not."""
    global _refusing
    _refusing = socket.socket()
    _refusing.bind((processes.LOOPBACK, 0))
    url = f"amqp://guest:guest@{processes.LOOPBACK}:{_refusing.getsockname()[1]}//"
    settings.CELERY_BROKER_URL = url
    current_app.conf.broker_url = url
    # One refused connection is the answer: kombu would otherwise try again for up to its
    # connect timeout (4 s) on each publish, and the hint thread would fall behind the tests.
    # Both settings: a publish with Celery's retry policy copies that policy into its pooled
    # connection's transport options (kombu's Producer.publish), which a kick then reuses.
    current_app.conf.broker_transport_options = {"max_retries": 0}
    current_app.conf.task_publish_retry_policy = {"max_retries": 0}


def _empty_every_table(self):
    database_snapshots.empty_every_table()


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if WORKER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.worker)
        if BROKER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.broker)


@pytest.fixture(autouse=True)
def _sign_ins_unbudgeted(monkeypatch):
    """Tests sign in many times a second; the budget itself is tested on its own
    (tests/console/test_staff_sessions.py)."""
    monkeypatch.setattr(sign_in_budget, "password_checks", sign_in_budget.TokenBucket(per_s=1e9, burst=10**9))


@pytest.fixture(autouse=True)
def _processes_only_where_marked(request, monkeypatch):
    """Keeps the fast tier honest: starting a process needs a mark that `make test-fast` skips."""
    if any(request.node.get_closest_marker(mark) for mark in PROCESS_MARKS):
        return

    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{request.node.nodeid} starts a process: mark it `worker` or `servers`")

    monkeypatch.setattr(processes.ManagedProcess, "__init__", refuse)


@pytest.fixture(scope="session")
def _fresh_redis():
    """Tests never touch the demo's Redis database; the first test that uses Redis empties it."""
    redis_client().flushdb()


@pytest.fixture
def clean_redis(_fresh_redis):
    redis_client().flushdb()
    yield redis_client()


@pytest.fixture
def worker(transactional_db, clean_redis):
    """A real Celery worker consuming every build and stats lane, stopped after the test."""
    process = child_processes.start_worker(ALL_QUEUES, "worker")
    yield process
    process.stop()


@pytest.fixture
def delivery_worker(transactional_db, clean_redis):
    """A real delivery worker (deliver.control and every destination's queue), stopped after the test."""
    process = child_processes.start_delivery_worker("delivery", OMNIUM_SWEEP_INTERVAL_S=0.5)
    yield process
    process.stop()


@pytest.fixture
def beat(transactional_db):
    process = child_processes.start_beat(OMNIUM_SWEEP_INTERVAL_S=0.5)
    yield process
    process.stop()


GAMES_TABLES = ("games_", "feeds_", "feed_")


def make_small_games():
    from devtools.generator import Generator
    from omnium.feeds.builder import build_file, files_of

    games = Generator("small", seed=7).run()
    for doc_key in files_of(games.code):
        build_file(doc_key)


def the_small_games():
    """The small Games as made by make_small_games, read back."""
    from devtools.generator import games_code
    from omnium.delivery.engine import rendering
    from omnium.games.models import Games

    # The same versions may come back in another test: renders this process kept must go.
    rendering.forget_all()
    return Games.objects.get(code=games_code("small", 7))


@pytest.fixture
def small_games(transactional_db):
    """A small Games (seed 7) with every file built once: generated on first use in a session,
    copied back from a snapshot for every later test (milliseconds instead of 0.3 s)."""
    database_snapshots.made_once("small_games", make_small_games, GAMES_TABLES)
    return the_small_games()
