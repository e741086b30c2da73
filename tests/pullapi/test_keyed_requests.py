"""The API process's WSGI application: keyed file requests it holds in memory are answered
before Django, everything else by Django's whole chain, and both answer as the API promises."""

import gc

import orjson
import pytest
from django.conf import settings
from django.urls import URLPattern, get_resolver

from omnium.pullapi import keyed_requests
from omnium.pullapi.urls import KEYED_PATH_PREFIXES
from omnium.pullapi.views import PullView
from tests.pullapi.conftest import bearer, call, environ


@pytest.fixture
def app():
    return keyed_requests.ApiApplication()


def test_a_keyed_file_request_sets_no_cookie_and_keeps_the_security_headers(games, entitle, app):
    _, key = entitle("acme", games, "medals")
    path = f"/v1/feeds/{games.code}/medals"

    assert keyed_requests.is_keyed_pull_request(environ(path, **bearer(key)))
    status, headers, body = call(app, environ(path, **bearer(key)))
    assert status == 200
    assert orjson.loads(body)["feed"]["type"] == "medals"
    # What still runs: the security headers, and no session or CSRF cookie is ever set.
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert "Set-Cookie" not in headers
    status, _, body = call(app, environ(path, HTTP_IF_NONE_MATCH=headers["ETag"], HTTP_X_API_KEY=key))
    assert (status, body) == (304, b"")


def test_memory_hits_replay_every_keyed_layer_but_the_browser_sessions():
    keyed = keyed_requests.keyed_middleware()
    assert "django.middleware.security.SecurityMiddleware" in keyed
    assert not set(keyed) & keyed_requests.BROWSER_SESSION_MIDDLEWARE
    assert "django.contrib.sessions.middleware.SessionMiddleware" in settings.MIDDLEWARE


def test_a_bad_or_blank_key_in_a_header_is_refused_with_a_problem(games, entitle, app):
    entitle("acme", games, "medals")
    path = f"/v1/feeds/{games.code}/medals"
    for headers in (bearer("omk_nonsense"), {"HTTP_X_API_KEY": "   "}):
        env = environ(path, **headers)
        assert keyed_requests.is_keyed_pull_request(env)
        status, response_headers, body = call(app, env)
        assert status == 401
        assert response_headers["Content-Type"] == "application/problem+json"
        assert orjson.loads(body)["status"] == 401


def test_staff_sessions_basic_auth_query_keys_and_staff_pages_are_not_keyed_pulls(games, entitle, app,
                                                                                   admin_client):
    _, key = entitle("acme", games, "medals")
    feed = f"/v1/feeds/{games.code}/medals"
    admin_client.get("/admin/")  # a session cookie
    session_cookie = admin_client.cookies[settings.SESSION_COOKIE_NAME].value
    staff = {"HTTP_COOKIE": f"{settings.SESSION_COOKIE_NAME}={session_cookie}"}

    whole = [environ(feed, **staff), environ(feed, HTTP_AUTHORIZATION="Basic YWRtaW46cGFzc3dvcmQ="),
             environ(feed, {"key": key}), environ("/v1/docs", **bearer(key)),
             environ("/v1/schema", **bearer(key)), environ("/v1/health/read-path", **bearer(key)),
             environ("/admin/", **bearer(key)), environ("/metrics", **bearer(key))]
    assert not any(keyed_requests.is_keyed_pull_request(env) for env in whole)
    assert call(app, environ(feed, **staff))[0] == 200  # the staff's browsable view
    assert call(app, environ("/v1/docs", **bearer(key)))[0] == 302  # to the admin login, not a 500
    assert call(app, environ("/v1/health/read-path", **{**bearer(key), **staff}))[0] == 200


def test_every_file_endpoint_and_only_those_are_keyed_paths():
    for pattern in get_resolver().url_patterns:
        if not isinstance(pattern, URLPattern):
            continue
        view_class = getattr(pattern.callback, "view_class", None)
        path = "/" + str(pattern.pattern)
        is_file_endpoint = isinstance(view_class, type) and issubclass(view_class, PullView)
        assert path.startswith(KEYED_PATH_PREFIXES) == is_file_endpoint, path


def test_the_start_up_heap_is_frozen_out_of_the_garbage_collector():
    gc.unfreeze()
    try:
        assert isinstance(keyed_requests.api_application(), keyed_requests.ApiApplication)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()

