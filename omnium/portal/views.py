"""The portal's pages: one client's destinations, files, proofs, pull keys and freshness.

Every page takes its client from the link that opened the session (`links.link_of`), never
from the URL, so a visitor sees that client's data and no other whatever address it types.
"""

from functools import wraps

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from omnium.clients.models import Destination
from omnium.delivery.models import DeliveryState
from omnium.delivery.operations import control, status
from omnium.portal import links
from omnium.portal.models import PortalAction
from omnium.reports.views import freshness_report

RECENT_ACTIONS = 20
# A destination's state, as its client's engineers read it.
HEALTH_WORDS = {
    "running": "Delivering normally.",
    "backing_off": "The last sends failed; trying again.",
    "failing": "Failing: sends have failed again and again. We are trying again, and our staff are alerted.",
    "paused": "Paused.",
    "off": "Switched off: nothing is sent.",
}


def refused(request, why: str, status_code: int = 403) -> HttpResponse:
    return render(request, "portal/refused.html", {"why": why}, status=status_code)


def portal_page(view):
    """The view, given the client of the session's link; a refusal page without one."""

    @wraps(view)
    def checked(request, *args, **kwargs):
        link, why = links.link_of(request.session)
        if link is None:
            return refused(request, why)
        request.portal_link = link
        response = view(request, link.client, *args, **kwargs)
        response["Cache-Control"] = "no-store"  # a client's proofs stay out of shared caches
        return response

    return checked


def open_link(request, token: str):
    link, why = links.open_link(request.session, token)
    if link is None:
        return refused(request, why)
    return redirect("portal-home")


@portal_page
def home(request, client):
    destinations = status.client_status(client)
    for row in destinations:
        row.health_words = HEALTH_WORDS.get(row.status, row.status)
    keys = client.api_keys.order_by("-created_at")
    actions = client.portal_actions.all()[:RECENT_ACTIONS]
    return render(request, "portal/home.html", {"client": client, "destinations": destinations, "keys": keys,
                                                "actions": actions})


@require_POST
@portal_page
def destination_action(request, client, destination_id: int):
    """Pause (with a reason), resume or resend everything: only the client's own destinations;
    another's id is answered as if it did not exist."""
    destination = get_object_or_404(Destination, pk=destination_id, client=client, system=False)
    action, reason = request.POST.get("action"), request.POST.get("reason", "").strip()
    if action == "pause" and not reason:
        messages.error(request, "Say why you pause it: our staff see the reason too.")
    elif action == "pause":
        control.pause(destination.pk, f"by the client: {reason}"[:500])
        done(request, client, f"paused {destination.name}: {reason}")
    elif action == "resume":
        control.resume(destination.pk)
        done(request, client, f"resumed {destination.name}")
    elif action == "resend":
        count = control.resend(destination.states.values_list("pk", flat=True), why="Resent by the client")
        done(request, client, f"asked to resend every file of {destination.name} ({count})")
    else:
        messages.error(request, f"Unknown action {action!r}.")
    return redirect(reverse("portal-home") + f"#destination-{destination.pk}")


@require_POST
@portal_page
def resend_file(request, client, state_id: int):
    state = get_object_or_404(DeliveryState.objects.select_related("destination"), pk=state_id,
                              destination__client=client, destination__system=False)
    control.resend([state.pk], why="Resent by the client")
    done(request, client, f"asked to resend {state.doc_key} to {state.destination.name}")
    return redirect(reverse("portal-home") + f"#destination-{state.destination_id}")


def done(request, client, what: str) -> None:
    """Recorded in the portal's audit log, and said on the next page."""
    PortalAction.objects.create(client=client, link=request.portal_link, what=what[:200])
    messages.success(request, f"Done: {what}.")


@portal_page
def freshness(request, client):
    return freshness_report(request, client, "portal/freshness.html", {})


@require_POST
def sign_out(request):
    links.close(request.session)
    return render(request, "portal/refused.html", {"why": "You have left the portal.", "signed_out": True})


urlpatterns = [
    path("", home, name="portal-home"),
    path("freshness/", freshness, name="portal-freshness"),
    path("destination/<int:destination_id>/", destination_action, name="portal-destination-action"),
    path("file/<int:state_id>/resend/", resend_file, name="portal-resend-file"),
    path("sign-out/", sign_out, name="portal-sign-out"),
    path("open/<str:token>/", open_link, name="portal-open"),
]
