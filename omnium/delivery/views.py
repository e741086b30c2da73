"""The delivery status screens (staff only, inside the admin) and the destination controls."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from omnium.clients.models import Client, Destination
from omnium.delivery.operations import control, status
from omnium.delivery.permissions import may_drive_delivery


def overview(request):
    chosen = {name: request.GET.get(name, "") for name in ("state", "client", "kind", "page")}
    found = status.overview(chosen["state"], chosen["client"], chosen["kind"], chosen["page"] or "1")
    context = {**admin.site.each_context(request), **found}
    return render(request, "admin/delivery/overview.html", context)


def client_status(request, client_id: int):
    client = get_object_or_404(Client, pk=client_id)
    context = {**admin.site.each_context(request), "client": client, "destinations": status.client_status(client),
               "delivery_switch": status.delivery_switch(), "may_drive_delivery": may_drive_delivery(request.user)}
    return render(request, "admin/delivery/client_status.html", context)


@require_POST
def destination_control(request, destination_id: int):
    if not may_drive_delivery(request.user):  # staff with view permission only: they look, never act
        raise PermissionDenied
    destination = get_object_or_404(Destination, pk=destination_id)
    action = request.POST.get("action")
    if action == "pause":
        reason = request.POST.get("reason", "").strip()
        if not reason:
            messages.error(request, "Say why the destination is paused.")
        else:
            control.pause(destination.pk, reason, by=request.user)
            messages.success(request, f"{destination.name} paused.")
    elif action == "resume":
        control.resume(destination.pk, by=request.user)
        messages.success(request, f"{destination.name} resumed.")
    elif action == "retry":
        control.retry_now(destination.pk, by=request.user)
        messages.success(request, f"{destination.name}: retrying now.")
    elif action == "replay":
        messages.success(request, f"{control.replay_dead_letters(destination.pk, by=request.user)} dead letter(s) replayed.")
    else:
        messages.error(request, f"Unknown action {action!r}.")
    return redirect(reverse("delivery-client-status", args=[destination.client_id]) + f"#destination-{destination.pk}")


urlpatterns = [
    path("status/", admin.site.admin_view(overview), name="delivery-overview"),
    path("status/client/<int:client_id>/", admin.site.admin_view(client_status), name="delivery-client-status"),
    path("status/destination/<int:destination_id>/control/", admin.site.admin_view(destination_control),
         name="delivery-destination-control"),
]
