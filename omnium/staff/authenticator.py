"""The page where a signed-in person sets up their authenticator app (TOTP, RFC 6238), or
removes it: a QR code and the secret to type by hand, then one code from the app to show that
it works. Nothing changes for the person until that code is right."""

import base64

import qrcode
from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, LogEntry
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django_otp import login as mark_verified
from django_otp.plugins.otp_totp.models import TOTPDevice
from qrcode.image.svg import SvgPathImage

APP = "authenticator app"


class CodeForm(forms.Form):
    code = forms.CharField(label="Code the app shows", max_length=10, widget=forms.TextInput(
        attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "autofocus": True}))


def authenticator_page(request):
    app = TOTPDevice.objects.filter(user=request.user, confirmed=True).first()
    return _removal(request, app) if app else _set_up(request)


def _set_up(request):
    # The secret stays the same across reloads until the person confirms it, so a QR code
    # scanned a minute ago still matches.
    app = (TOTPDevice.objects.filter(user=request.user, confirmed=False).first()
           or TOTPDevice.objects.create(user=request.user, name=APP, confirmed=False))
    form = CodeForm(request.POST or None)
    if form.is_valid() and _right_code(form, app):
        app.confirmed = True
        app.save(update_fields=["confirmed"])
        mark_verified(request, app)  # this session stays signed in
        _record(request.user, "set up an authenticator app")
        messages.success(request, "Your authenticator app is set up: from now on you sign in with its code "
                                  "as well as your password.")
        return redirect("admin:authenticator")
    secret = base64.b32encode(app.bin_key).decode()
    return _page(request, form, set_up=False, qr_code=_qr_code(app.config_url),
                 secret=" ".join(secret[i:i + 4] for i in range(0, len(secret), 4)))


def _removal(request, app):
    form = CodeForm(request.POST or None)
    if form.is_valid() and _right_code(form, app):
        TOTPDevice.objects.filter(user=request.user).delete()
        _record(request.user, "removed their authenticator app")
        messages.success(request, "Your authenticator app is removed: you sign in with your password alone.")
        return redirect("admin:authenticator")
    return _page(request, form, set_up=True, since=app.created_at, last_used=app.last_used_at)


def _right_code(form: CodeForm, app: TOTPDevice) -> bool:
    """django-otp checks the code and throttles wrong ones (each failure doubles the wait)."""
    if app.verify_token(form.cleaned_data["code"].replace(" ", "")):
        return True
    form.add_error("code", "That is not the code the app shows now (or too many wrong codes were typed: "
                           "wait a little). Check that the phone's clock is right, then type the current code.")
    return False


def _qr_code(url: str) -> str:
    svg: bytes = qrcode.make(url, image_factory=SvgPathImage).to_string()
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode()


def _page(request, form: CodeForm, **shown):
    context = {**admin.site.each_context(request), "title": "Authenticator app", "form": form, **shown}
    return TemplateResponse(request, "admin/staff/authenticator.html", context)


def _record(user, message: str) -> None:
    """In the person's own history (Django's LogEntry), like every other operator action."""
    LogEntry.objects.log_actions(user.pk, [user], CHANGE, change_message=message)
