"""Every URL, in two sides that production serves from separate processes (OMNIUM_SERVES): the
pull API for clients, and the admin for staff (with each client's portal). The load
balancer's probes and /metrics are on both, so each process can be probed and scraped on its
own port."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from omnium.metrics.views import metrics
from omnium.pullapi.readiness import healthz, readyz
from omnium.pullapi.urls import client_patterns, schema_patterns

PROBES = [
    path("healthz", healthz, name="healthz"),  # load balancers: unauthenticated, cheap
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
]
STAFF = [
    *schema_patterns,  # the pull API's schema and browsable docs
    path("admin/delivery/", include("omnium.delivery.views")),
    path("admin/delivery/status/", include("omnium.reports.views")),
    path("admin/", admin.site.urls),
    path("portal/", include("omnium.portal.views")),  # each client's own window, opened by a link
]
# The pull API (/getfeeds, /v1/…) first and not nested in an include: it takes thousands of
# requests a second, and each level of URL resolving costs every one of them.
urlpatterns = {
    "api": [*client_patterns, *PROBES],
    "admin": [*PROBES, *STAFF],
    "all": [*client_patterns, *PROBES, *STAFF],
}[settings.OMNIUM_SERVES]
