"""What the OpenAPI schema (/v1/schema) says about the pull API, so a generated client can trust it.

Every path and query parameter carries the pattern or format the views check (the patterns are
``file_requests``' own), so a request the schema calls valid is never answered 400; every
endpoint lists its refusals (400, 401, 403, 404, 429) with their problem body, the 304 that
answers a current ``If-None-Match``, the headers of a file answer, and both ways to send a key.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers

from omnium.pullapi.file_requests import FEED_TYPE_PATTERN, NAME_PATTERN
from omnium.pullapi.problems import CONTENT_TYPE as PROBLEM_CONTENT_TYPE

# /getfeeds' feedtype: a feed type, or a feed type, "_" and a filter (country_IND).
LEGACY_FEED_TYPE_PATTERN = rf"[a-z][a-z_]{{0,29}}(_{NAME_PATTERN})?"


def anchored(pattern: str) -> str:
    return f"^{pattern}$"


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """A key in either header; either one is enough (an OR of two requirements)."""

    target_class = "omnium.pullapi.key_authentication.ApiKeyAuthentication"
    name = ["pullKey", "pullKeyHeader"]

    def get_security_requirement(self, auto_schema):
        return [{name: []} for name in self.name]

    def get_security_definition(self, auto_schema):
        return [
            {"type": "http", "scheme": "bearer", "description": "Your key (omk_…) as `Authorization: Bearer omk_…`."},
            {"type": "apiKey", "in": "header", "name": "X-Api-Key", "description": "Your key (omk_…)."},
        ]


class ProblemSerializer(serializers.Serializer):
    """An RFC 9457 problem (``problems.problem_response``)."""

    type = serializers.CharField(help_text="urn:omnium:problem:<code>, e.g. urn:omnium:problem:not-entitled")
    title = serializers.CharField(help_text="The HTTP status phrase.")
    status = serializers.IntegerField()
    detail = serializers.CharField(help_text="What was wrong, for a person.")
    instance = serializers.CharField(allow_null=True, help_text="The path asked for.")

    class Meta:
        ref_name = "Problem"


def _problem(description: str) -> OpenApiResponse:
    return OpenApiResponse(ProblemSerializer, description=description)


def _path(name: str, description: str, **shape) -> OpenApiParameter:
    kind = shape.pop("type", str)
    return OpenApiParameter(name, kind, OpenApiParameter.PATH, description=description, **shape)


GAMES = _path("games", "The Games code, e.g. ag1.", pattern=anchored(NAME_PATTERN))
FEED_TYPE = _path("feed_type", "A feed type, e.g. medals, country.", pattern=anchored(FEED_TYPE_PATTERN))
FILTER = _path("filter", "The file of a per-country or per-record feed: a NOC (IND), a day, a unit.",
               pattern=anchored(NAME_PATTERN))
DAY = _path("day", "A day of the Games (UTC).", type=OpenApiTypes.DATE)
FIXTURE_ID = _path("fixture_id", "A fixture's id.", type=OpenApiTypes.UUID)
ATHLETE_ID = _path("athlete_id", "An athlete's id.", type=OpenApiTypes.UUID)
UNIT = _path("unit", "A competition unit's code.", pattern=anchored(NAME_PATTERN))

LEGACY_QUERY = [
    OpenApiParameter("seriesid", str, required=True, pattern=anchored(NAME_PATTERN),
                     description="The Games code, e.g. ag1."),
    OpenApiParameter("feedtype", str, required=True, pattern=anchored(LEGACY_FEED_TYPE_PATTERN),
                     description="A feed type (medals), or a feed type, '_' and a filter (country_IND, "
                                 "calendar_day_2026-09-23)."),
    OpenApiParameter("client", str, description="Your client name; if given, it must be your key's."),
    OpenApiParameter("key", str, description="Your key, only for keys allowed in the address."),
]

FILE_HEADERS = [
    OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER,
                     description="The ETag of the copy you hold: answered 304 while it is current."),
    OpenApiParameter("ETag", str, OpenApiParameter.HEADER, response=[200, 304],
                     description="The version of the file; send it back as If-None-Match."),
    OpenApiParameter("Cache-Control", str, OpenApiParameter.HEADER, response=[200, 304],
                     description="private, no-cache: keep a copy, but ask again every time."),
    OpenApiParameter("Retry-After", int, OpenApiParameter.HEADER, response=[429],
                     description="Seconds to wait before the next request."),
]

FILE_RESPONSES = {
    (200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT, description="The file (JSON shapes)."),
    (200, "application/xml"): OpenApiResponse(OpenApiTypes.STR, description="The file (the XML shape)."),
    304: OpenApiResponse(description="Not modified: the ETag in If-None-Match is the current version."),
    (400, PROBLEM_CONTENT_TYPE): _problem("A parameter breaks its pattern or format."),
    (401, PROBLEM_CONTENT_TYPE): _problem("No key, or not a valid one."),
    (403, PROBLEM_CONTENT_TYPE): _problem("Your key does not entitle you to this file (or it is unknown to you)."),
    (404, PROBLEM_CONTENT_TYPE): _problem("No such file among those you are entitled to."),
    (429, PROBLEM_CONTENT_TYPE): _problem("Too many requests: wait for Retry-After seconds."),
}


def file_endpoint(summary: str, *parameters: OpenApiParameter, operation_id: str | None = None):
    """The schema of an endpoint that answers with a stored file."""
    return extend_schema(summary=summary, operation_id=operation_id, responses=FILE_RESPONSES,
                         parameters=[*parameters, *FILE_HEADERS])
