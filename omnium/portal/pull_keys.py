"""The client's pull keys in its portal: issue a new one (shown once, on the page that answers),
giving the older ones an expiry to move over in, and bring one key's end forward.

A key's end only ever comes sooner here: a client cannot give a key back a life its staff
or its account manager took away. The change reaches every API process through the key's
own save notice, and an expiry is checked per request from then on (pullapi).
"""

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from omnium.clients.models import ApiKey
from omnium.portal.access import portal_page, record

OLDER_KEYS_END = [(0, "keep working as they are"), (1, "stop working in 1 day"), (7, "stop working in 7 days"),
                  (30, "stop working in 30 days")]
END_ONE_KEY = [("0", "now"), ("1h", "in 1 hour"), ("1d", "in 1 day"), ("7d", "in 7 days")]
_END_IN = {"0": timedelta(0), "1h": timedelta(hours=1), "1d": timedelta(days=1), "7d": timedelta(days=7)}


class NewKeyForm(forms.Form):
    name = forms.CharField(max_length=100, label="What the key is for",
                           help_text="For example “production 2027”. Shown beside the key, never secret.")
    older_keys_end_in_days = forms.TypedChoiceField(choices=OLDER_KEYS_END, coerce=int, initial=7,
                                                    label="Your other working keys")


@require_POST
@portal_page
def issue_key(request, client):
    form = NewKeyForm(request.POST)
    if not form.is_valid():
        messages.error(request, "No key issued: " + "; ".join(
            f"{form.fields[name].label.lower()}: {' '.join(errors)}" for name, errors in form.errors.items()))
        return redirect(reverse("portal-home") + "#keys")
    days = form.cleaned_data["older_keys_end_in_days"]
    key, plain = ApiKey.issue(client, form.cleaned_data["name"],
                              old_keys_expire_in=timedelta(days=days) if days else None)
    older = client.api_keys.exclude(pk=key.pk).filter(revoked_at__isnull=True, expires_at__gt=timezone.now())
    ends = f"; the other keys stop working in {days} day(s)" if days else ""
    record(request, f"issued the pull key {key.name} ({key.lookup_id}…){ends}", say=False)
    return render(request, "portal/key_issued.html", {"client": client, "key": key, "plain_key": plain,
                                                      "older": older.order_by("expires_at")})


@require_POST
@portal_page
def end_key(request, client, key_id: int):
    key = get_object_or_404(ApiKey, pk=key_id, client=client)
    end_in = _END_IN.get(request.POST.get("end_in", ""))
    if end_in is None:
        messages.error(request, "Choose when the key stops working.")
    elif not key.active:
        messages.error(request, f"The key {key.lookup_id}… already does not work.")
    else:
        ends = timezone.now() + end_in
        if key.expires_at is None or ends < key.expires_at:
            key.expires_at = ends
            key.save(update_fields=["expires_at"])  # its notice tells every API process
        record(request, f"set the pull key {key.name} ({key.lookup_id}…) to stop working "
                        f"{'now' if not end_in else f'at {key.expires_at:%Y-%m-%d %H:%M} UTC'}")
    return redirect(reverse("portal-home") + "#keys")
