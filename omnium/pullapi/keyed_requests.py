"""The WSGI application of an API process: a pull request that brings its key in a header
skips the middleware only browser sessions need.

Sessions, CSRF, the session's user and messages serve the admin and the staff's browsable
API. A request to a file endpoint with a key in its `Authorization: Bearer` or `X-Api-Key`
header is answered on the key alone (ApiKeyAuthentication accepts or refuses it before any
session is looked at), so for it those four layers were only cost: with them, a 304 took a
fifth more of the request thread's time (bench/pull.py on this machine: 5,700 -> 7,100 304s a
second without them). The pull request counter, the security headers and CommonMiddleware
still run. Every other request (the admin, staff sessions, /metrics, the schema and docs, a
legacy key in the query string) goes through the whole chain. Before either, the commonest
keyed request of all, a feed file this process holds and knows current, is answered without
Django's handler (memory_hits.py).

The start-up heap (Django, the apps, the URLconf and every view it imports) is then frozen
out of the garbage collector: a full collection walked it all, about 60 ms during which the
process answered nothing, once in the first seconds of traffic and again later; frozen, a
full collection takes under 2 ms.
"""

import gc

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.urls import get_resolver

from omnium.pullapi.keys import header_key
from omnium.pullapi.memory_hits import MemoryHits
from omnium.pullapi.urls import KEYED_PATH_PREFIXES

BROWSER_SESSION_MIDDLEWARE = frozenset({
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
})


def keyed_middleware() -> list[str]:
    return [name for name in settings.MIDDLEWARE if name not in BROWSER_SESSION_MIDDLEWARE]


class KeyedPullHandler(WSGIHandler):
    """Django's WSGI handler with MIDDLEWARE minus BROWSER_SESSION_MIDDLEWARE."""

    def load_middleware(self, is_async=False):
        # Django builds the chain from settings.MIDDLEWARE and takes no list of its own; the
        # setting is narrowed only while this handler is made, at start-up, before any request.
        whole = settings.MIDDLEWARE
        settings.MIDDLEWARE = keyed_middleware()
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = whole


def is_keyed_pull_request(environ) -> bool:
    return environ.get("PATH_INFO", "").startswith(KEYED_PATH_PREFIXES) and header_key(environ) is not None


class ApiApplication:
    def __init__(self):
        self.whole = WSGIHandler()
        self.keyed = KeyedPullHandler()
        self.memory_hits = MemoryHits(keyed_middleware())

    def handler_for(self, environ) -> WSGIHandler:
        return self.keyed if is_keyed_pull_request(environ) else self.whole

    def __call__(self, environ, start_response):
        handler = self.handler_for(environ)
        if handler is self.keyed:
            answer = self.memory_hits.answer(environ, start_response)
            if answer is not None:
                return answer
        return handler(environ, start_response)


def api_application() -> ApiApplication:
    """What omnium/wsgi.py serves (after django.setup): the URLconf loaded, the start-up heap frozen."""
    application = ApiApplication()
    get_resolver().url_patterns  # noqa: B018 (imports every view now, so that they are frozen too)
    gc.collect()
    gc.freeze()
    return application
