"""What a client does to its own destinations through the portal: pause (with a reason),
resume, resend a file or everything, rotate a webhook's signing secret, test the connection,
and download a file as it would be pushed. Each is recorded in the portal's audit log.

Each action finds its destination or file among the visitor's client's own, never a system
destination; another client's id is answered as if it did not exist (404).
"""

import base64
import hashlib
import secrets
import time
from datetime import UTC, datetime
from pathlib import PurePosixPath

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from omnium.clients import secrets_manager
from omnium.clients.credentials import CredentialError
from omnium.clients.models import Destination
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryState, Probe
from omnium.delivery.operations import control, probes
from omnium.portal.access import portal_page, record
from omnium.transports.webhook import SECRET_PREFIX, WebhookTransport

OVERLAP_HOURS = [(1, "1 hour"), (24, "24 hours"), (72, "3 days"), (168, "7 days")]
PROBE_PAGE_RELOAD_S = 2


def own_destination(client, destination_id: int) -> Destination:
    return get_object_or_404(Destination, pk=destination_id, client=client, system=False)


def own_file(client, state_id: int) -> DeliveryState:
    return get_object_or_404(
        DeliveryState.objects.select_related("destination", "subscription__destination__client",
                                             "subscription__definition__games"),
        pk=state_id, destination__client=client, destination__system=False)


def back_to(destination_id: int):
    return redirect(reverse("portal-home") + f"#destination-{destination_id}")


@require_POST
@portal_page
def destination_action(request, client, destination_id: int):
    """Pause (with a reason), resume or resend every file now."""
    destination = own_destination(client, destination_id)
    action, reason = request.POST.get("action"), request.POST.get("reason", "").strip()
    if action == "pause" and not reason:
        messages.error(request, "Say why you pause it: our staff see the reason too.")
    elif action == "pause":
        control.pause(destination.pk, f"by the client: {reason}"[:500])
        record(request, f"paused {destination.name}: {reason}")
    elif action == "resume":
        control.resume(destination.pk)
        record(request, f"resumed {destination.name}")
    elif action == "resend":
        count = control.resend(destination.states.values_list("pk", flat=True), why="Resent by the client")
        record(request, f"asked to resend every file of {destination.name} ({count})")
    else:
        messages.error(request, f"Unknown action {action!r}.")
    return back_to(destination.pk)


@require_POST
@portal_page
def resend_file(request, client, state_id: int):
    state = own_file(client, state_id)
    control.resend([state.pk], why="Resent by the client")
    record(request, f"asked to resend {state.doc_key} to {state.destination.name}")
    return back_to(state.destination_id)


@portal_page
def download_file(request, client, state_id: int):
    """The file as it would be pushed to this destination now, byte for byte, with the version
    and SHA-256 in headers, so a client can compare it with what it holds."""
    state = own_file(client, state_id)
    file = sender.file_as_pushed(state)
    if file is None:
        raise Http404("This file no longer exists.")
    record(request, f"downloaded {file.path} (version {file.version}) as sent to {state.destination.name}", say=False)
    response = HttpResponse(file.body, content_type=file.content_type)
    response["Content-Disposition"] = f'attachment; filename="{PurePosixPath(file.path).name}"'
    response["Omnium-Version"] = str(file.version)
    response["Omnium-Path"] = file.path
    response["Omnium-SHA256"] = hashlib.sha256(file.body).hexdigest()
    response["ETag"] = f'"{file.etag}"'
    return response


@require_POST
@portal_page
def rotate_secret(request, client, destination_id: int):
    """A new signing secret for a webhook, made here and shown once; the old one signs beside
    it for the chosen overlap, so the receiver switches without missing a file."""
    destination = own_destination(client, destination_id)
    stored, refusal = _stored_secret(destination)
    try:
        hours = int(request.POST.get("overlap_hours", ""))
    except ValueError:
        hours = None
    if hours not in dict(OVERLAP_HOURS):
        refusal = refusal or "Choose how long the old secret signs beside the new one."
    if refusal:
        messages.error(request, refusal)
        return back_to(destination.pk)
    new_secret = SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()
    kept = {name: value for name, value in stored.items() if name not in WebhookTransport.ROTATION}
    destination.set_credentials(WebhookTransport.credentials_replacing(
        stored, {**kept, "secret": new_secret}, {**destination.config, "secret_overlap_hours": hours}))
    destination.save(update_fields=["credentials_encrypted", "updated_at"])
    until = datetime.fromtimestamp(time.time() + hours * 3600, UTC)
    record(request, f"rotated the signing secret of {destination.name}; the old one signs beside it until "
                    f"{until:%Y-%m-%d %H:%M} UTC", say=False)
    return render(request, "portal/secret_rotated.html",
                  {"client": client, "destination": destination, "secret": new_secret, "until": until})


def _stored_secret(destination: Destination) -> tuple[dict, str]:
    """The destination's stored credentials, and why its secret cannot be rotated here ("" when it can)."""
    if destination.kind != "webhook":
        return {}, "Only a webhook has a signing secret to rotate."
    try:
        stored = destination.stored_credentials
    except CredentialError:
        return {}, "Its stored credentials cannot be read: ask your account manager."
    if secrets_manager.reference_in(stored) is not None:
        return stored, "Its secret is kept in your AWS Secrets Manager: rotate it there."
    if not stored.get("secret"):
        return stored, "It has no signing secret yet: ask your account manager."
    return stored, ""


@require_POST
@portal_page
def test_connection(request, client, destination_id: int):
    """Ask a delivery worker to test the connection (as staff's test does, and under the same
    caps); the result page fills in when it comes."""
    destination = own_destination(client, destination_id)
    started = probes.start_client_connection_test(destination)
    if not started.probes:
        messages.error(request, f"Not started: {started.why_not}.")
        return back_to(destination.pk)
    record(request, f"tested the connection of {destination.name}", say=False)
    return redirect("portal-connection-test", probe_id=started.probes[0].pk)


@portal_page
def connection_test(request, client, probe_id):
    probe = get_object_or_404(Probe.objects.select_related("destination"), pk=probe_id,
                              destination__client=client, requested_by__isnull=True)
    abandoned = probes.is_abandoned(probe)
    return render(request, "portal/connection_test.html",
                  {"client": client, "probe": probe, "outcome": probe.outcome or {},
                   "waiting": probe.finished_at is None and not abandoned, "abandoned": abandoned,
                   "reload_s": PROBE_PAGE_RELOAD_S})
