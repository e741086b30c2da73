"""The admin site: Django's, with an optional second factor (django-otp, TOTP).

A person who has set up an authenticator app signs in with the password and the app's code; a
person who has not signs in with the password alone. Each can set one up at any time
(`authenticator`). Codes are throttled by django-otp (each failure doubles the wait), beside
django-axes' lockout for passwords."""

import time

from django.conf import settings
from django.contrib.admin import AdminSite, ModelAdmin
from django.http import HttpResponse
from django.urls import path
from django.utils.html import escape
from django_otp import devices_for_user, user_has_device
from django_otp.admin import OTPAdminAuthenticationForm, OTPAdminSite
from django_otp.plugins.otp_totp.models import TOTPDevice

from omnium.staff import sign_in_budget
from omnium.staff.authenticator import authenticator_page

BUSY = ("More sign-ins reach this server than it checks: wait a few seconds and sign in again. "
        "If it lasts, someone is trying passwords by the thousand; your operations team can see it in the log.")
# The refusal is a few bytes, not the sign-in page, sent after a wait that costs no CPU, so a
# flood is not answered (and back) at once (docs/decisions/006-admin-sign-in-flood.md). Not
# where the admin shares the API's processes: the wait would hold the pulls' threads.
REFUSAL_WAIT_S = 1.0
BUSY_PAGE = (f"<!doctype html><html lang=en><title>Busy</title><p>{escape(BUSY)}</p>"
             "<p><a href=\"\">Back to sign in</a></p></html>")


def over_budget_refusal(request) -> HttpResponse | None:
    """The refusal of a sign-in beyond the process's budget of password checks (staff's and
    the client portal's alike); None when its password may be checked."""
    if request.method != "POST" or sign_in_budget.allow_password_check():
        return None
    if settings.OMNIUM_SERVES == "admin":
        time.sleep(REFUSAL_WAIT_S)
    return HttpResponse(BUSY_PAGE, status=429, headers={"Retry-After": "2"})


class SignInForm(OTPAdminAuthenticationForm):
    """User name and password; then, only for a person with an authenticator app, its code.
    A person has at most one app, so the form picks it: nothing to choose."""

    otp_error_messages = {
        **OTPAdminAuthenticationForm.otp_error_messages,
        "token_required": "This account has an authenticator app: type the 6-digit code it shows.",
        "invalid_token": "That code is not the one the authenticator app shows now: try the next one.",
    }

    def clean_otp(self, user):
        devices = list(devices_for_user(user)) if user is not None else []
        if not devices:
            return  # no authenticator app: the password was enough
        if not self.cleaned_data.get("otp_device"):
            self.cleaned_data["otp_device"] = devices[0].persistent_id
        super().clean_otp(user)


class StaffAdminSite(OTPAdminSite):
    login_form = SignInForm
    login_template = "admin/staff/login.html"

    def __init__(self, name="admin"):
        # OTPAdminSite names itself "otpadmin"; this is the site behind every `admin:` URL.
        AdminSite.__init__(self, name)
        # Before django-otp's own admin for the model (which would show each secret) is found:
        # that one then finds the model registered and leaves it.
        self.register(TOTPDevice, AuthenticatorAppAdmin)

    def has_permission(self, request):
        """Staff, and verified by their authenticator app if they have one (a session signed in
        before the app was set up is asked to sign in again)."""
        if not AdminSite.has_permission(self, request):
            return False
        return request.user.is_verified() or not user_has_device(request.user)

    def login(self, request, extra_context=None):
        """Django's sign-in, within the process's budget of password checks (`sign_in_budget`)."""
        return over_budget_refusal(request) or super().login(request, extra_context)

    def get_urls(self):
        return [path("authenticator/", self.admin_view(authenticator_page), name="authenticator"),
                *super().get_urls()]


class AuthenticatorAppAdmin(ModelAdmin):
    """Who has an authenticator app, since when and when last used. Deleting one is how a person
    who lost their phone signs in again with the password alone. The secret is never shown:
    each person sets up their own app on their own page."""

    list_display = ("user", "confirmed", "created_at", "last_used_at", "throttling_failure_count")
    list_filter = ("confirmed",)
    search_fields = ("user__username",)
    fields = list_display
    readonly_fields = list_display

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
