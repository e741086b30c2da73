"""Real Celery worker and beat processes for tests, pointed at the test database."""

import os

from django.conf import settings
from django.db import connection

from devtools import processes
from tests.dev_environment import XDIST_WORKER

# Each xdist worker's processes log apart: tests read a process's log for what it printed.
LOG_DIR = processes.ROOT / "var" / "test-logs" / (XDIST_WORKER or "serial")


def database_of_this_run() -> str:
    """This process's test database, named before pytest-django names it: an xdist worker's
    has the worker's name appended (pytest-django does the same)."""
    name = settings.DATABASES["default"]["TEST"]["NAME"]
    return f"{name}_{XDIST_WORKER}" if XDIST_WORKER and not name.endswith(XDIST_WORKER) else name


def database_url() -> str:
    """The test database's URL: for child processes, and for a test's own psycopg connection
    beside Django's (to lock a table, watch pg_stat_activity, end a backend)."""
    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def child_environment(**overrides) -> dict:
    """The environment of a child process: same settings, but the test database."""
    env = dict(os.environ)
    env.setdefault("DJANGO_DEBUG", "true")  # children load the settings too, with the development keys
    env["DATABASE_URL"] = database_url()
    env["CELERY_BROKER_URL"] = settings.CELERY_BROKER_URL  # this run's own vhost (tests/conftest.py)
    env.update({k: str(v) for k, v in overrides.items()})
    return env


def start_worker(queues: list[str], name: str, concurrency: int = 2, **env_overrides):
    return processes.start_worker(queues, name, concurrency, child_environment(**env_overrides), LOG_DIR)


def start_beat(name: str = "beat", **env_overrides):
    return processes.start_beat(name, child_environment(**env_overrides), LOG_DIR)


def start_delivery_worker(name: str = "delivery", concurrency: int = 32, **env_overrides):
    return processes.start_delivery_worker(name, concurrency, child_environment(**env_overrides), LOG_DIR)
