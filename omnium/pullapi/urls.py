from django.contrib.admin.views.decorators import staff_member_required
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from omnium.pullapi import views

# The file endpoints, which answer on an API key alone: a request to one of them with its key
# in a header skips the browser-session middleware (keyed_requests.py). Not the health, schema
# and docs pages below, which are for staff sessions.
KEYED_PATH_PREFIXES = ("/v1/feeds/", "/getfeeds", "/v1/fixtures/", "/v1/standings/", "/v1/medals/", "/v1/athletes/")

# Most requested first: Django tries patterns in order.
urlpatterns = [
    path("v1/feeds/<str:games>/<str:feed_type>", views.FeedFileView.as_view(), name="feed-file"),
    path("v1/feeds/<str:games>/<str:feed_type>/<str:filter>", views.FilteredFeedFileView.as_view(),
         name="feed-file-filtered"),
    path("v1/feeds/<str:games>/calendar/days/<str:day>", views.CalendarDayView.as_view(), name="calendar-day"),
    path("v1/feeds/<str:games>/calendar/fixtures/<str:fixture_id>", views.CalendarFixtureView.as_view(),
         name="calendar-fixture"),
    path("getfeeds", views.GetFeedsView.as_view(), name="getfeeds"),
    path("v1/fixtures/<str:fixture_id>", views.FixtureDocumentView.as_view(), name="fixture-document"),
    path("v1/standings/<str:games>/<str:unit>", views.StandingsDocumentView.as_view(), name="standings-document"),
    path("v1/medals/<str:games>", views.MedalsDocumentView.as_view(), name="medals-document"),
    path("v1/athletes/<str:athlete_id>/career", views.CareerDocumentView.as_view(), name="career-document"),
    path("v1/health/read-path", views.ReadPathHealthView.as_view(), name="pull-read-path-health"),
    path("v1/schema", SpectacularAPIView.as_view(), name="pull-schema"),
    path("v1/docs", staff_member_required(SpectacularSwaggerView.as_view(url_name="pull-schema")), name="pull-docs"),
]
