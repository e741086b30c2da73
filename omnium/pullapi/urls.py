"""The pull API's routes, each written once in ROUTES: the URL patterns, the path prefixes that
take the keyed chain (keyed_requests.py) and the paths memory hits answer (memory_hits.py) are
all derived from it, so a route added, moved or renamed here moves everywhere."""

import re
from typing import NamedTuple

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib.admin.views.decorators import staff_member_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from omnium.pullapi import views

# The schema's browsable docs: Swagger UI from our own static files (drf-spectacular-sidecar),
# its start-up script a file of its own (the "split" view). Its bundle adds inline styles, so this
# page alone allows them; scripts stay our origin's only.
api_reference = staff_member_required(csp_update({"style-src": [UNSAFE_INLINE]})(
    SpectacularSwaggerSplitView.as_view(url_name="pull-schema")))


class Route(NamedTuple):
    path: str  # Django's route syntax, <str:name> segments only
    view: object
    name: str
    # Answered on an API key alone: a request with its key in a header skips the
    # browser-session middleware. False for the health, schema and docs pages (staff sessions).
    keyed: bool


# Most requested first: Django tries patterns in order.
ROUTES = [
    Route("v1/feeds/<str:games>/<str:feed_type>", views.FeedFileView.as_view(), "feed-file", True),
    Route("v1/feeds/<str:games>/<str:feed_type>/<str:filter>", views.FilteredFeedFileView.as_view(),
          "feed-file-filtered", True),
    Route("v1/feeds/<str:games>/calendar/days/<str:day>", views.CalendarDayView.as_view(), "calendar-day", True),
    Route("v1/feeds/<str:games>/calendar/fixtures/<str:fixture_id>", views.CalendarFixtureView.as_view(),
          "calendar-fixture", True),
    Route("getfeeds", views.GetFeedsView.as_view(), "getfeeds", True),
    Route("v1/fixtures/<str:fixture_id>", views.FixtureDocumentView.as_view(), "fixture-document", True),
    Route("v1/standings/<str:games>/<str:unit>", views.StandingsDocumentView.as_view(), "standings-document", True),
    Route("v1/medals/<str:games>", views.MedalsDocumentView.as_view(), "medals-document", True),
    Route("v1/athletes/<str:athlete_id>/career", views.CareerDocumentView.as_view(), "career-document", True),
    Route("v1/health/read-path", views.ReadPathHealthView.as_view(), "pull-read-path-health", False),
    Route("v1/schema", SpectacularAPIView.as_view(), "pull-schema", False),
    Route("v1/docs", api_reference, "pull-docs", False),
]
# The two routes of a feed file, /v1/feeds/{games}/{feed_type}[/{filter}]: what memory hits serve.
FEED_FILE_ROUTES = ("feed-file", "feed-file-filtered")

# The schema and its browsable docs are for staff, served where the admin is; every other route
# (the files, and each API process's own read-path health) by the API processes.
SCHEMA_ROUTES = ("pull-schema", "pull-docs")
urlpatterns = [path(route.path, route.view, name=route.name) for route in ROUTES]
client_patterns = [pattern for pattern, route in zip(urlpatterns, ROUTES) if route.name not in SCHEMA_ROUTES]
schema_patterns = [pattern for pattern, route in zip(urlpatterns, ROUTES) if route.name in SCHEMA_ROUTES]

# Everything up to a route's first parameter: "/v1/feeds/", "/getfeeds", …
KEYED_PATH_PREFIXES = tuple(dict.fromkeys("/" + route.path.split("<", 1)[0] for route in ROUTES if route.keyed))


def path_regex(route: Route) -> re.Pattern:
    """The request paths `route` matches, its parameters as named groups (a <str:…> segment is
    one or more characters other than "/", as Django's str converter reads it)."""
    return re.compile("/" + re.sub(r"<str:(\w+)>", r"(?P<\1>[^/]+)", re.escape(route.path)))
