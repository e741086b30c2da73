"""The pull API's most frequent answer, given before Django's request handling: a keyed GET of
a feed file that this process holds and knows to be current.

Under load nearly every request is a client polling a file it already has, answered from
memory (a 304, or the stored gzip). For such a request our own work (key, throttle,
entitlement, memory, answer) is a fraction of what Django's handler, its URL resolver and
DRF's dispatch cost around it. Here that one case is answered with the very functions the
view uses, and the response middleware of the keyed chain (security headers, X-Frame-Options,
Content-Length) still runs. Every other request goes to Django untouched, and Django does
all of it as before: another path or method, a query string, no key or one to refuse
(refusals are counted there), a host or scheme the middleware redirects or refuses, a file
the key may not have, a file not in memory or not known current (Redis is asked there), a
client over its rate. tests/pullapi/test_memory_hits.py holds both paths to the same answers.

Middleware this module does not know would be skipped here, so with any in the keyed chain it
answers nothing, says so once as a WARNING, and Django serves everything.
"""

import logging

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.core.handlers.wsgi import WSGIRequest
from django.utils.module_loading import import_string
from rest_framework.exceptions import APIException

from omnium.metrics import pull_requests
from omnium.pullapi import file_requests, key_authentication, throttles
from omnium.pullapi.read_path import Served, read_path
from omnium.pullapi.responses import file_response
from omnium.pullapi.urls import FEED_FILE_ROUTES, ROUTES, path_regex

log = logging.getLogger(__name__)

# The paths of a feed file, /v1/feeds/{games}/{feed_type}[/{filter}], from the route table.
FEED_FILE_PATHS = tuple(path_regex(route) for route in ROUTES if route.name in FEED_FILE_ROUTES)

COUNTER = "omnium.metrics.pull_requests.PullRequestCounter"
# Middleware whose request and response sides only read the request and add headers: run here
# as Django runs them.
REPLAYED = frozenset({
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # In a process that serves the admin too (OMNIUM_SERVES=all: a development machine, the
    # demo); an API process leaves it out.
    "csp.middleware.CSPMiddleware",
})


def _never_called(request):
    raise AssertionError("memory hits call the middleware's process_request and process_response only")


class MemoryHits:
    def __init__(self, middleware: list[str]):
        unknown = [name for name in middleware if name != COUNTER and name not in REPLAYED]
        self.enabled = not unknown
        if unknown:
            log.warning("memory hits are off, so every keyed file request goes through Django's handler "
                        "(slower, same answers): the keyed middleware chain has layers they cannot replay: %s",
                        ", ".join(unknown))
        replayed = [import_string(name)(_never_called) for name in middleware if name in REPLAYED]
        self._request_side = [layer.process_request for layer in replayed if hasattr(layer, "process_request")]
        self._response_side = [layer.process_response for layer in reversed(replayed)
                               if hasattr(layer, "process_response")]

    def answer(self, environ, start_response):
        """The WSGI answer when this is a memory hit, else None (and Django answers)."""
        if not self.enabled or environ.get("REQUEST_METHOD") != "GET" or environ.get("QUERY_STRING"):
            return None
        match = feed_file_match(environ.get("PATH_INFO", ""))
        if match is None:
            return None
        known = key_authentication.valid_header_key(environ)
        if known is None:
            return None
        # A copy: Django's request writes its decoded path back into the environ it is given,
        # and the environ goes on to Django's handler when this is no hit (which could then
        # not make a request of it: a 500 for any path beyond Latin-1).
        request = WSGIRequest(dict(environ))
        if not self._passes_request_side(request):
            return None
        try:
            address = file_requests.feed_file(known.client, **match.groupdict())
        except APIException:
            return None
        path = read_path()
        file = path.current_in_memory(address.redis_key)
        if file is None or not throttles.allow(known.client):
            return None
        response = file_response(request.META, Served(file), address.content_type,
                                 keep_plain=lambda kept: path.memory.put(address.redis_key, kept))
        for process_response in self._response_side:
            response = process_response(request, response)
        pull_requests.count(response.status_code)
        start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
        return [response.content]

    def _passes_request_side(self, request) -> bool:
        """False when a middleware would answer instead (an HTTPS redirect) or refuse (a host
        not allowed): Django does that."""
        try:
            return all(process_request(request) is None for process_request in self._request_side)
        except (SuspiciousOperation, PermissionDenied):
            return False


def feed_file_match(path: str):
    for pattern in FEED_FILE_PATHS:
        if match := pattern.fullmatch(path):
            return match
    return None
