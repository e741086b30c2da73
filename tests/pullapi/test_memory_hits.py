"""Memory hits: a keyed feed file request that this process can answer from memory is answered
before Django's handler, exactly as Django would answer it; everything else is left to Django."""

import logging
import re
import time
from types import SimpleNamespace

import pytest
from django.urls import resolve

from omnium.pullapi import keyed_requests
from omnium.pullapi.memory_hits import MemoryHits, feed_file_match
from omnium.pullapi.read_path import read_path
from omnium.pullapi.urls import FEED_FILE_ROUTES, ROUTES
from tests.metrics.scraping import sample
from tests.pullapi.conftest import bearer, call, environ, fill_pull_cache, wait_until

METRICS_TOKEN = "memory-hits-token"


def answered_as_a_hit(app, env: dict):
    """(status, headers, body) when the request is a memory hit, None when left to Django."""
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), dict(headers)

    body = app.memory_hits.answer(env, start_response)
    return None if body is None else (answer["status"], answer["headers"], b"".join(body))


@pytest.fixture
def medals(listening, games, entitle, settings):
    """A key entitled to the medal table, which one request has read and Redis confirmed."""
    settings.OMNIUM = {**settings.OMNIUM, "METRICS_TOKEN": METRICS_TOKEN}
    client, key = entitle("acme", games, "medals")
    fill_pull_cache()
    path = f"/v1/feeds/{games.code}/medals"
    app = keyed_requests.ApiApplication()
    assert answered_as_a_hit(app, environ(path, **bearer(key))) is None  # not in memory yet
    status, headers, _ = call(app, environ(path, **bearer(key)))
    assert status == 200
    return SimpleNamespace(client=client, key=key, path=path, etag=headers["ETag"], games=games)


def requests_of(medals) -> dict:
    """The ways clients poll a file, each a fresh environ per call."""
    key, path, etag = medals.key, medals.path, medals.etag
    return {
        "304": lambda: environ(path, **bearer(key), HTTP_IF_NONE_MATCH=etag, HTTP_ACCEPT_ENCODING="gzip"),
        "304, X-Api-Key, one ETag of several": lambda: environ(path, HTTP_X_API_KEY=key,
                                                                HTTP_IF_NONE_MATCH=f'"other", {etag}'),
        "200 gzip": lambda: environ(path, **bearer(key), HTTP_ACCEPT_ENCODING="gzip, deflate"),
        "200 plain, an old ETag": lambda: environ(path, **bearer(key), HTTP_IF_NONE_MATCH='W/"old"'),
        "200 over HTTPS (HSTS)": lambda: environ(path, **bearer(key), HTTP_ACCEPT_ENCODING="gzip", secure=True),
    }


def test_a_memory_hit_answers_exactly_as_django_would(medals, settings):
    settings.SECURE_HSTS_SECONDS = 3600  # as in production, where HTTPS answers carry HSTS
    app = keyed_requests.ApiApplication()  # the middleware reads its settings when made

    for name, request in requests_of(medals).items():
        as_a_hit = answered_as_a_hit(app, request())
        assert as_a_hit is not None, name
        assert as_a_hit == call(app.django, request()), name
    assert answered_as_a_hit(app, requests_of(medals)["200 over HTTPS (HSTS)"]())[1]["Strict-Transport-Security"]


def test_a_memory_hit_asks_neither_redis_nor_the_database_and_is_counted(
        medals, client, django_assert_num_queries, redis_commands):
    app = keyed_requests.ApiApplication()
    metrics = {"HTTP_AUTHORIZATION": f"Bearer {METRICS_TOKEN}"}
    before = sample(client.get("/metrics", **metrics).content.decode(), "omnium_pull_requests_total", status="304")
    hits_before = read_path().stats.memory_hits
    redis_commands.clear()

    with django_assert_num_queries(0):
        answers = [call(app, requests_of(medals)["304"]()) for _ in range(3)]

    assert [status for status, _, _ in answers] == [304] * 3
    assert redis_commands == []
    assert read_path().stats.memory_hits == hits_before + 3
    after = sample(client.get("/metrics", **metrics).content.decode(), "omnium_pull_requests_total", status="304")
    assert after == before + 3


def test_what_memory_cannot_answer_is_left_to_django_which_answers_as_the_api_promises(medals, entitle, settings):
    app = keyed_requests.ApiApplication()
    _, stranger = entitle("stranger", medals.games, "calendar")
    games, key = medals.games.code, medals.key
    left_to_django = {
        # (environ, the status Django answers it with)
        "an unknown key": (environ(medals.path, **bearer("omk_" + "x" * 40)), 401),
        "a key without the entitlement": (environ(medals.path, **bearer(stranger)), 403),
        "a feed type that does not exist": (environ(f"/v1/feeds/{games}/nonsense", **bearer(key)), 403),
        "a malformed filter": (environ(f"/v1/feeds/{games}/medals/x%20y", **bearer(key)), 400),
        "a query string": (environ(medals.path, {"pretty": "1"}, **bearer(key)), 200),
        "a HEAD": ({**environ(medals.path, **bearer(key)), "REQUEST_METHOD": "HEAD"}, 200),
        "a host not allowed": (environ(medals.path, **bearer(key), HTTP_HOST="evil.example"), 400),
        "another endpoint": (environ(f"/v1/medals/{games}", **bearer(key)), 200),
    }
    for name, (env, status) in left_to_django.items():
        assert answered_as_a_hit(app, dict(env)) is None, name
        assert call(app, env)[0] == status, name


def test_plain_http_is_redirected_by_django_when_https_is_required(medals, settings):
    settings.SECURE_SSL_REDIRECT = True
    app = keyed_requests.ApiApplication()
    env = requests_of(medals)["304"]

    assert answered_as_a_hit(app, env()) is None
    assert call(app, env())[0] == 301
    assert answered_as_a_hit(app, {**env(), "wsgi.url_scheme": "https"})[0] == 304


def test_a_client_over_its_rate_is_refused_by_django(medals, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_CLIENT_RATE": 2}
    app = keyed_requests.ApiApplication()
    env = requests_of(medals)["304"]

    second = int(time.time())  # the count is per second: start a fresh one
    wait_until(lambda: int(time.time()) > second, "the next second", timeout=1.5)

    statuses = [call(app, env())[0] for _ in range(4)]

    assert statuses == [304, 304, 429, 429]


def test_with_the_invalidation_channel_down_every_request_goes_to_django_and_asks_redis(medals, redis_commands):
    app = keyed_requests.ApiApplication()
    read_path().invalidations.channel_down()
    env = requests_of(medals)["304"]
    redis_commands.clear()

    assert answered_as_a_hit(app, env()) is None
    assert call(app, env())[0] == 304
    assert "HGET" in redis_commands


def test_middleware_memory_hits_would_skip_turns_them_off_with_a_warning_naming_it(medals, caplog):
    middleware = [*keyed_requests.keyed_middleware(), "django.middleware.gzip.GZipMiddleware"]

    with caplog.at_level(logging.WARNING, logger="omnium.pullapi.memory_hits"):
        hits = MemoryHits(middleware)

    assert not hits.enabled
    assert hits.answer(requests_of(medals)["304"](), lambda *args: None) is None
    [warning] = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert "memory hits are off" in warning.getMessage()
    assert "django.middleware.gzip.GZipMiddleware" in warning.getMessage()


def test_the_feed_file_paths_memory_hits_serve_are_the_url_patterns_of_the_feed_file_views():
    for route in ROUTES:
        example = "/" + re.sub(r"<str:(\w+)>", "x", route.path)
        resolved = resolve(example)
        served_as_hit = feed_file_match(example) is not None
        assert served_as_hit == (resolved.url_name in FEED_FILE_ROUTES), example
        if served_as_hit:
            assert feed_file_match(example).groupdict() == resolved.kwargs
