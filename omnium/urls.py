from django.contrib import admin
from django.urls import include, path

from omnium.metrics.views import metrics
from omnium.pullapi.readiness import healthz, readyz
from omnium.pullapi.urls import urlpatterns as pull_api

urlpatterns = [
    # The pull API (/getfeeds, /v1/…) first and not nested in an include: it takes thousands
    # of requests a second, and each level of URL resolving costs every one of them.
    *pull_api,
    path("healthz", healthz, name="healthz"),  # load balancers: unauthenticated, cheap
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics, name="metrics"),
    path("admin/delivery/", include("omnium.delivery.views")),
    path("admin/", admin.site.urls),
]
