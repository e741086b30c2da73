"""The WSGI application of an API process: Django's, with the commonest keyed request of all
answered before it.

A feed file this process holds and knows current, asked for with a key in the
`Authorization: Bearer` or `X-Api-Key` header, is answered without Django's handler
(memory_hits.py), and without the layers only browser sessions need (sessions, CSRF, the
session's user, messages): ApiKeyAuthentication accepts or refuses such a request on the key
alone. Every other request, keyed ones that miss memory included, goes through Django's whole
middleware chain.

The start-up heap (Django, the apps, the URLconf and every view it imports) is then frozen
out of the garbage collector: a full collection walked it all, about 60 ms during which the
process answered nothing, once in the first seconds of traffic and again later; frozen, a
full collection takes under 2 ms.
"""

import gc

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.urls import get_resolver

from omnium.pullapi.key_authentication import header_key
from omnium.pullapi.memory_hits import MemoryHits
from omnium.pullapi.urls import KEYED_PATH_PREFIXES

BROWSER_SESSION_MIDDLEWARE = frozenset({
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "axes.middleware.AxesMiddleware",  # admin sign-ins only
    "django_otp.middleware.OTPMiddleware",  # a staff session's authenticator code
})


def keyed_middleware() -> list[str]:
    """The middleware a keyed file request needs: what memory hits replay."""
    return [name for name in settings.MIDDLEWARE if name not in BROWSER_SESSION_MIDDLEWARE]


def is_keyed_pull_request(environ) -> bool:
    return environ.get("PATH_INFO", "").startswith(KEYED_PATH_PREFIXES) and header_key(environ) is not None


class ApiApplication:
    def __init__(self):
        self.django = WSGIHandler()
        self.memory_hits = MemoryHits(keyed_middleware())

    def __call__(self, environ, start_response):
        if is_keyed_pull_request(environ):
            answer = self.memory_hits.answer(environ, start_response)
            if answer is not None:
                return answer
        return self.django(environ, start_response)


def api_application() -> ApiApplication:
    """What omnium/wsgi.py serves (after django.setup): the URLconf loaded, the start-up heap frozen."""
    application = ApiApplication()
    get_resolver().url_patterns  # noqa: B018 (imports every view now, so that they are frozen too)
    gc.collect()
    gc.freeze()
    return application
