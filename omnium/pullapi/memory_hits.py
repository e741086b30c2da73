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
answers nothing and Django serves everything.
"""

import logging
import re

from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.core.handlers.wsgi import WSGIRequest
from django.utils.module_loading import import_string
from rest_framework.exceptions import APIException

from omnium.metrics import pull_requests
from omnium.pullapi import file_requests, keys, throttles
from omnium.pullapi.read_path import Served, read_path
from omnium.pullapi.responses import file_response

log = logging.getLogger(__name__)

# The two URL patterns of a feed file (urls.py): /v1/feeds/{games}/{feed_type}[/{filter}].
FEED_FILE_PATH = re.compile(r"/v1/feeds/([^/]+)/([^/]+)(?:/([^/]+))?")

COUNTER = "omnium.metrics.pull_requests.PullRequestCounter"
# Middleware whose request and response sides only read the request and add headers: run here
# as Django runs them.
REPLAYED = frozenset({
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
})


def _never_called(request):
    raise AssertionError("memory hits call the middleware's process_request and process_response only")


class MemoryHits:
    def __init__(self, middleware: list[str]):
        unknown = [name for name in middleware if name != COUNTER and name not in REPLAYED]
        self.enabled = not unknown
        if unknown:
            log.info("memory hits off: the keyed chain has middleware they do not run (%s)", ", ".join(unknown))
        replayed = [import_string(name)(_never_called) for name in middleware if name in REPLAYED]
        self._request_side = [layer.process_request for layer in replayed if hasattr(layer, "process_request")]
        self._response_side = [layer.process_response for layer in reversed(replayed)
                               if hasattr(layer, "process_response")]

    def answer(self, environ, start_response):
        """The WSGI answer when this is a memory hit, else None (and Django answers)."""
        if not self.enabled or environ.get("REQUEST_METHOD") != "GET" or environ.get("QUERY_STRING"):
            return None
        match = FEED_FILE_PATH.fullmatch(environ.get("PATH_INFO", ""))
        if match is None:
            return None
        known = keys.valid_header_key(environ)
        if known is None:
            return None
        # A copy: Django's request writes its decoded path back into the environ it is given,
        # and the environ goes on to Django's handler when this is no hit (which could then
        # not make a request of it: a 500 for any path beyond Latin-1).
        request = WSGIRequest(dict(environ))
        if not self._passes_request_side(request):
            return None
        try:
            address = file_requests.feed_file(known.client, *match.groups(default=""))
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
