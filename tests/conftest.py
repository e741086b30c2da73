import pytest

pytest_plugins = ["tests.delivery.fixtures"]
from django.conf import settings

from omnium.redis_client import redis_client
from omnium.routing import BULK_QUEUES, LIVE_QUEUES
from tests import processes

ALL_QUEUES = LIVE_QUEUES + BULK_QUEUES


@pytest.fixture(scope="session", autouse=True)
def _separate_redis():
    """Tests must never touch the demo's Redis database; start from an empty one."""
    assert not settings.REDIS_URL.endswith("/0"), "run tests through `make test` (REDIS_URL=.../15)"
    redis_client().flushdb()
    yield


@pytest.fixture
def clean_redis():
    redis_client().flushdb()
    yield redis_client()


@pytest.fixture
def worker(transactional_db, clean_redis):
    """A real Celery worker consuming every build and stats lane, stopped after the test."""
    process = processes.start_worker(ALL_QUEUES, "worker")
    yield process
    process.stop()


@pytest.fixture
def beat(transactional_db):
    process = processes.start_beat(OMNIUM_SWEEP_INTERVAL_S=0.5)
    yield process
    process.stop()


@pytest.fixture
def small_games(transactional_db):
    """A freshly generated small Games with every file built once."""
    from omnium.feeds.builder import build_file, files_of
    from omnium.games.generator import Generator

    games = Generator("small", seed=7).run()
    for doc_key in files_of(games.code):
        build_file(doc_key)
    return games
