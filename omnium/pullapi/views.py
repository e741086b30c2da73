"""The pull API's endpoints. Each one turns its parameters into a file address (all checks
in memory), reads it through the read path and answers with the stored bytes.

The views stay DRF APIViews (authentication, permission, throttle, problem bodies, schema,
browsable API for staff) but skip what a file answer does not need: parsers, versioning,
DRF's full Accept parsing and its renderers (files are sent as stored).
"""

import os

import orjson
from drf_spectacular.utils import extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import IsAdminUser
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from omnium.pullapi import file_requests, schema
from omnium.pullapi.catalogue import PullClient
from omnium.pullapi.key_authentication import ApiKeyAuthentication
from omnium.pullapi.negotiation import PullNegotiation
from omnium.pullapi.permissions import KeyHolderOrStaff
from omnium.pullapi.problems import Malformed, NotEntitled, UnknownFile
from omnium.pullapi.read_path import FileNotFound, read_path
from omnium.pullapi.responses import file_response
from omnium.pullapi.throttles import ClientRateThrottle


class PullView(APIView):
    """DRF's APIView, trimmed for a hot read path (measured with bench/pull.py and cProfile:
    together these save about 60 µs of the ~300 µs a request costs on this machine):

    - authenticators, permissions and throttles are stateless, so one instance of each
      serves every request instead of new ones per request;
    - `initial` skips format suffixes, versioning and content negotiation: files are sent
      as stored, and DRF negotiates lazily (finalize_response) when it renders a Response,
      i.e. for the staff's browsable view;
    - no default response headers (`Allow` only on a 405; no `Vary: Accept`: only staff
      get HTML, and answers are `private`, never kept by a shared cache);
    - no parser context: every endpoint is a GET without a body.
    """

    authentication_classes = [ApiKeyAuthentication, SessionAuthentication]
    permission_classes = [KeyHolderOrStaff]
    throttle_classes = [ClientRateThrottle]
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer]
    parser_classes = []
    content_negotiation_class = PullNegotiation
    versioning_class = None

    _authenticators = tuple(cls() for cls in authentication_classes)
    _permissions = tuple(cls() for cls in permission_classes)
    _throttles = tuple(cls() for cls in throttle_classes)
    _negotiator = content_negotiation_class()

    def get_content_negotiator(self):
        return self._negotiator

    def get_parser_context(self, http_request):
        return {"view": self}  # nothing is parsed: every endpoint is a GET

    def get_authenticators(self):
        return self._authenticators

    def get_permissions(self):
        return self._permissions

    def get_throttles(self):
        return self._throttles

    @property
    def default_response_headers(self):
        return {}

    def http_method_not_allowed(self, request, *args, **kwargs):
        self.headers["Allow"] = "GET, HEAD, OPTIONS"  # finalize_response adds it to the 405
        return super().http_method_not_allowed(request, *args, **kwargs)

    def initial(self, request, *args, **kwargs):
        self.format_kwarg = None
        self.perform_authentication(request)
        self.check_permissions(request)
        self.check_throttles(request)

    def serve(self, request, address):
        path = read_path()
        try:
            served = path.read(address)
        except FileNotFound:
            raise UnknownFile() from None
        if "text/html" in request.META.get("HTTP_ACCEPT", "") and not isinstance(request.user, PullClient):
            return Response(orjson.loads(served.file.plain))  # staff in a browser: the browsable API
        return file_response(request.META, served, address.content_type,
                             keep_plain=lambda file: path.memory.put(address.redis_key, file))


class FeedFileView(PullView):
    """A feed file: `/v1/feeds/{games}/{feed_type}[/{filter}]`, e.g. `/v1/feeds/ag1/country/IND`."""

    @schema.file_endpoint("A feed file, in your entitled shape", schema.GAMES, schema.FEED_TYPE,
                          operation_id="feed_file")
    def get(self, request, games, feed_type, filter=""):
        return self.serve(request, file_requests.feed_file(request.user, games, feed_type, filter))


class FilteredFeedFileView(FeedFileView):
    """A feed file with a filter: `/v1/feeds/{games}/{feed_type}/{filter}` (a NOC, a day, a unit)."""

    @schema.file_endpoint("A feed file of one filter, in your entitled shape", schema.GAMES, schema.FEED_TYPE,
                          schema.FILTER, operation_id="feed_file_filtered")
    def get(self, request, games, feed_type, filter):
        return super().get(request, games, feed_type, filter)


class CalendarDayView(PullView):
    """One day of the calendar (the calendar is too big to poll whole)."""

    @schema.file_endpoint("One day of the calendar (YYYY-MM-DD, UTC)", schema.GAMES, schema.DAY)
    def get(self, request, games, day):
        file_requests.check_filter("calendar_day", day)  # the schema says a date: anything else is a 400
        return self.serve(request, file_requests.feed_file(request.user, games, "calendar_day", day))


class CalendarFixtureView(PullView):
    """One fixture of the calendar."""

    @schema.file_endpoint("One fixture of the calendar", schema.GAMES, schema.FIXTURE_ID)
    def get(self, request, games, fixture_id):
        filter = file_requests.record_filter(fixture_id)
        return self.serve(request, file_requests.feed_file(request.user, games, "fixture", filter))


class GetFeedsView(PullView):
    """The legacy `/getfeeds`: the same files, named the old way; the key is still required."""

    @schema.file_endpoint("Legacy: a feed file by client, feed type and series", *schema.LEGACY_QUERY)
    def get(self, request):
        query = request.query_params
        games, feedtype = query.get("seriesid", ""), query.get("feedtype", "")
        if not games or not feedtype:
            raise Malformed("Give both seriesid (the Games code) and feedtype.")
        named = query.get("client")
        if named and getattr(request.user, "name", named) != named:
            raise NotEntitled("This key belongs to another client.")
        feed_type, filter = file_requests.legacy_feed_type(games, feedtype)
        return self.serve(request, file_requests.feed_file(request.user, games, feed_type, filter))


class FixtureDocumentView(PullView):
    @schema.file_endpoint("A fixture with its competitors (needs the calendar of its Games)", schema.FIXTURE_ID)
    def get(self, request, fixture_id):
        return self.serve(request, file_requests.public_document(request.user, "fixture", fixture_id))


class CareerDocumentView(PullView):
    @schema.file_endpoint("An athlete's career across Games (needs the results of a Games entered)",
                          schema.ATHLETE_ID)
    def get(self, request, athlete_id):
        return self.serve(request, file_requests.public_document(request.user, "career", athlete_id))


class StandingsDocumentView(PullView):
    @schema.file_endpoint("The standings of one unit (needs the standings of the Games)", schema.GAMES, schema.UNIT)
    def get(self, request, games, unit):
        return self.serve(request, file_requests.games_document(request.user, games, "unit_standings", unit))


class MedalsDocumentView(PullView):
    @schema.file_endpoint("The medal table (needs the medals of the Games)", schema.GAMES)
    def get(self, request, games):
        return self.serve(request, file_requests.games_document(request.user, games, "medals"))


class ReadPathHealthView(APIView):
    """For staff: this API process's read path, above all whether a hit is free of Redis right
    now ("invalidations": "listening") or every request asks Redis (the channel is down)."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [IsAdminUser]

    @extend_schema(exclude=True)
    def get(self, request):
        return Response({"pid": os.getpid(), **read_path().health()})
