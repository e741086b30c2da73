"""The portal's reading pages (deliveries, freshness, checking a file), opening a link, leaving,
and the URLs of every portal page.

Every page takes its client from its visitor (`access`), never from the URL.
"""

import hashlib
import re

from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from omnium.delivery.models import DeliveryState
from omnium.delivery.operations import status
from omnium.portal import accounts, actions, links, pull_keys
from omnium.portal.access import portal_page, refused
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
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
LARGEST_CHECKED_FILE = 64 * 1024 * 1024


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
    recent = client.portal_actions.select_related("link", "account__user")[:RECENT_ACTIONS]
    return render(request, "portal/home.html", {
        "client": client, "destinations": destinations, "keys": keys, "actions": recent,
        "visitor": request.portal_visitor, "overlap_hours": actions.OVERLAP_HOURS,
        "new_key_form": pull_keys.NewKeyForm(), "end_one_key": pull_keys.END_ONE_KEY})


@portal_page
def freshness(request, client):
    return freshness_report(request, client, "portal/freshness.html", {})


@portal_page
def verify(request, client):
    """A file the client holds (uploaded) or its SHA-256 (pasted), checked against the proofs of
    what we last sent it: which file, version, destination and time these bytes are."""
    digest, checked = _digest_asked(request), request.method == "POST"
    matches = []
    if digest:
        matches = list(DeliveryState.objects.select_related("destination").filter(
            destination__client=client, destination__system=False, sent_bytes_sha256=bytes.fromhex(digest))
            .order_by("-sent_at"))
    return render(request, "portal/verify.html", {"client": client, "digest": digest, "checked": checked,
                                                  "matches": matches, "largest_mb": LARGEST_CHECKED_FILE >> 20})


def _digest_asked(request) -> str:
    """The SHA-256 (hex) of the uploaded file, or the one pasted; "" when neither is given."""
    if request.method != "POST":
        return ""
    upload = request.FILES.get("file")
    if upload is not None and upload.size <= LARGEST_CHECKED_FILE:
        hasher = hashlib.sha256()
        for chunk in upload.chunks():
            hasher.update(chunk)
        return hasher.hexdigest()
    pasted = request.POST.get("sha256", "").strip().lower()
    return pasted if SHA256_HEX.fullmatch(pasted) else ""


@require_POST
def sign_out(request):
    accounts.sign_out(request)
    return render(request, "portal/refused.html", {"why": "You have left the portal.", "signed_out": True})


urlpatterns = [
    path("", home, name="portal-home"),
    path("freshness/", freshness, name="portal-freshness"),
    path("check/", verify, name="portal-verify"),
    path("destination/<int:destination_id>/", actions.destination_action, name="portal-destination-action"),
    path("destination/<int:destination_id>/rotate-secret/", actions.rotate_secret, name="portal-rotate-secret"),
    path("destination/<int:destination_id>/test/", actions.test_connection, name="portal-test-connection"),
    path("connection-test/<uuid:probe_id>/", actions.connection_test, name="portal-connection-test"),
    path("file/<int:state_id>/resend/", actions.resend_file, name="portal-resend-file"),
    path("file/<int:state_id>/download/", actions.download_file, name="portal-download-file"),
    path("keys/new/", pull_keys.issue_key, name="portal-issue-key"),
    path("keys/<int:key_id>/end/", pull_keys.end_key, name="portal-end-key"),
    path("sign-in/", accounts.sign_in, name="portal-sign-in"),
    path("sign-in/new/", accounts.make_sign_in, name="portal-make-sign-in"),
    path("sign-out/", sign_out, name="portal-sign-out"),
    path("open/<str:token>/", open_link, name="portal-open"),
]
