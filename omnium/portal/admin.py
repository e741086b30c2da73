"""The portal in the admin: staff make a link for a client's people (its address shown once, on
the page that answers the form) and withdraw it; the list shows who made each, when it was
last opened and when it ends. What clients did through the portal is listed beside it."""

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.urls import reverse

from omnium.clients import audit
from omnium.portal import links
from omnium.portal.models import PortalAccount, PortalAction, PortalLink
from omnium.read_only_admin import ReadOnlyAdmin
from omnium.shown_once_admin import ShowSecretOnce

VALID_FOR_DAYS = [(1, "1 day"), (7, "7 days"), (30, "30 days"), (90, "90 days")]


class PortalLinkForm(forms.ModelForm):
    valid_for_days = forms.TypedChoiceField(choices=VALID_FOR_DAYS, coerce=int, initial=7, label="Works for",
                                            help_text="The link stops working after this; you can withdraw it before.")

    class Meta:
        model = PortalLink
        fields = ["client", "note"]


@admin.register(PortalLink)
class PortalLinkAdmin(ShowSecretOnce, admin.ModelAdmin):
    form = PortalLinkForm
    shown_once_template = "admin/portal/portallink/made.html"
    list_display = ["client", "note", "state", "created_at", "created_by", "expires_at", "last_opened_at"]
    list_filter = ["client"]
    search_fields = ["client__name", "note"]
    list_select_related = ["client", "created_by"]
    actions = ["withdraw"]

    def has_change_permission(self, request, link=None):
        return False  # a link is made, then withdrawn; never pointed at another client

    @admin.display(description="state")
    def state(self, link):
        return link.refusal().removeprefix("This ").removesuffix(".") or "works"

    def make_with_secret(self, request, link, form) -> dict:
        """The link's address is on the page that answers: it is nowhere else (only its digest is kept)."""
        made, token = links.make(form.cleaned_data["client"], form.cleaned_data["note"],
                                 timedelta(days=form.cleaned_data["valid_for_days"]), by=request.user)
        link.pk, link.token_hash, link.expires_at, link.created_at = made.pk, made.token_hash, made.expires_at, made.created_at
        audit.record(request.user, [made.client], f"Portal link made: {made.note} (until {made.expires_at:%Y-%m-%d %H:%M} UTC)")
        return {"title": f"Portal link for {made.client.name}", "link": link,
                "address": request.build_absolute_uri(reverse("portal-open", args=[token]))}

    @admin.action(description="Withdraw the selected links", permissions=["delete"])
    def withdraw(self, request, queryset):
        withdrawn = [link for link in queryset.select_related("client") if link.revoked_at is None]
        for link in withdrawn:
            link.revoke(by=request.user)
            audit.record(request.user, [link.client], f"Portal link withdrawn: {link.note}")
        self.message_user(request, f"{len(withdrawn)} link(s) withdrawn: the sessions they opened end "
                                   "at their next page.", messages.SUCCESS)


@admin.register(PortalAccount)
class PortalAccountAdmin(ReadOnlyAdmin):
    """The client's own people's sign-ins: made by them in the portal (with a link), switched
    off or on here. Switched off, a sign-in's sessions end at their next page."""

    deletable = False
    list_display = ["user", "client", "active", "created_at", "last_sign_in", "made_with"]
    list_filter = ["client", "user__is_active"]
    search_fields = ["client__name", "user__username"]
    list_select_related = ["client", "user", "made_with"]
    actions = ["switch_off", "switch_on"]

    @admin.display(boolean=True, description="works")
    def active(self, account):
        return account.user.is_active

    @admin.display(description="last sign-in")
    def last_sign_in(self, account):
        return account.user.last_login

    @admin.action(description="Switch off the selected sign-ins", permissions=["switch"])
    def switch_off(self, request, queryset):
        self._switch(request, queryset, active=False)

    @admin.action(description="Switch on the selected sign-ins", permissions=["switch"])
    def switch_on(self, request, queryset):
        self._switch(request, queryset, active=True)

    def has_switch_permission(self, request):
        return request.user.has_perm("portal.change_portalaccount")

    def _switch(self, request, queryset, active: bool) -> None:
        changed = [account for account in queryset.select_related("client", "user") if account.user.is_active != active]
        for account in changed:
            account.user.is_active = active
            account.user.save(update_fields=["is_active"])
            audit.record(request.user, [account.client],
                         f"Portal sign-in {account.user.get_username()} switched {'on' if active else 'off'}")
        self.message_user(request, f"{len(changed)} sign-in(s) switched {'on' if active else 'off'}.", messages.SUCCESS)


@admin.register(PortalAction)
class PortalActionAdmin(ReadOnlyAdmin):
    """What clients did through their portal, with the link each came with."""

    deletable = False
    list_display = ["at", "client", "what", "link", "account"]
    list_filter = ["client"]
    search_fields = ["client__name", "what"]
    list_select_related = ["client", "link", "account__user"]
