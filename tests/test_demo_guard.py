"""`make demo` empties Redis and rewrites clients and user ops: it runs only on local demo data."""

import pytest

from devtools import demo_guard

LOCAL_DEMO_DATABASE = {"NAME": "omnium", "HOST": "127.0.0.1"}


def test_the_default_local_setup_is_accepted():
    assert demo_guard.refusals(LOCAL_DEMO_DATABASE, "redis://127.0.0.1:6379/0") == []
    assert demo_guard.refusals({"NAME": "omnium_demo2", "HOST": ""}, "redis://localhost:6379") == []


@pytest.mark.parametrize("database", [
    {"NAME": "omnium_production", "HOST": "127.0.0.1"},
    {"NAME": "test_omnium", "HOST": "127.0.0.1"},
    {"NAME": "omnium", "HOST": "db.internal"},
    {"NAME": "omnium_demo", "HOST": "10.0.0.5"},
])
def test_a_database_that_is_not_a_local_demo_one_is_refused(database):
    assert demo_guard.refusals(database, "redis://127.0.0.1:6379/0")


@pytest.mark.parametrize("redis_url", [
    "redis://redis.internal:6379/0",
    "redis://127.0.0.1:6379/15",  # the tests' database
    "rediss://10.1.2.3:6380/0",
    "unix:///var/run/redis.sock",
])
def test_a_redis_that_is_not_the_local_demo_one_is_refused(redis_url):
    assert demo_guard.refusals(LOCAL_DEMO_DATABASE, redis_url)


def test_the_refusal_names_the_override():
    message = demo_guard.message(demo_guard.refusals({"NAME": "prod", "HOST": "db"}, "redis://db:6379/0"))
    assert "DEMO_I_MEAN_IT=1" in message and "'prod'" in message
