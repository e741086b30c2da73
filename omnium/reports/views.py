"""The freshness report in the admin (staff only), beside the client's delivery status."""

from django.contrib import admin
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import path

from omnium.clients.models import Client
from omnium.reports import freshness
from omnium.reports.models import FreshnessDay

REPORT_DAYS = 30


def client_freshness(request, client_id: int):
    """The client's freshness report for staff, beside its delivery status."""
    client = get_object_or_404(Client, pk=client_id)
    return freshness_report(request, client, "admin/delivery/client_freshness.html", admin.site.each_context(request))


def freshness_report(request, client: Client, template: str, context: dict) -> HttpResponse:
    """A table and a chart of the client's days against the 95 % line, the last REPORT_DAYS
    days; or every day kept as CSV (?format=csv). Staff's page and the client's portal."""
    days = FreshnessDay.objects.filter(client=client).order_by("-day")
    if request.GET.get("format") == "csv":
        response = HttpResponse(freshness.as_csv(days), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="omnium-freshness-client-{client.pk}.csv"'
        return response
    shown = list(days[:REPORT_DAYS])
    context = {**context, "client": client, "days": shown, "chart": freshness.chart_svg(shown),
               "promise_share": freshness.PROMISE_SHARE, "promise_s": freshness.PROMISE_S}
    return render(request, template, context)


urlpatterns = [
    path("client/<int:client_id>/freshness/", admin.site.admin_view(client_freshness), name="delivery-client-freshness"),
]
