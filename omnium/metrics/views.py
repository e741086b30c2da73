"""`/metrics`: Prometheus text format, for a scraper holding OMNIUM_METRICS_TOKEN (as a bearer
token) or a staff session. Counts come from every process group on this host
(`process_files`) and owed files from PostgreSQL (`owed_files`)."""

import glob
import hmac
import os

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from omnium.metrics import families
from omnium.metrics.owed_files import OwedFilesCollector
from omnium.metrics.process_files import in_multiprocess_mode


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        status = 403 if request.user.is_authenticated else 401
        return HttpResponse(status=status, headers={"WWW-Authenticate": 'Bearer realm="metrics"'})
    return HttpResponse(_exposition(), content_type=CONTENT_TYPE_LATEST)


def _allowed(request: HttpRequest) -> bool:
    token = settings.OMNIUM["METRICS_TOKEN"]
    scheme, _, offered = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and hmac.compare_digest(offered.strip().encode(), token.encode()):
        return True
    return request.user.is_active and request.user.is_staff


def _exposition() -> bytes:
    # Served from the first scrape, at 0, though no process has lost the broker yet: an alert
    # rule on a series that does not exist would never fire.
    families.broker_unreachable()
    # In multiprocess mode this process's own registry holds only its own share: the host's
    # files are the whole. Without it (runserver, tests) this process is the whole.
    counts = REGISTRY
    if in_multiprocess_mode():
        counts = CollectorRegistry()
        counts.register(HostCollector())
    owed = CollectorRegistry()
    owed.register(OwedFilesCollector())
    return generate_latest(counts) + generate_latest(owed)


class HostCollector:
    """Every process group's counts on this host, merged (the groups' files under OMNIUM_METRICS_DIR)."""

    def collect(self):
        files = glob.glob(os.path.join(settings.OMNIUM["METRICS_DIR"], "*", "*.db"))
        return MultiProcessCollector.merge(files, accumulate=True)
