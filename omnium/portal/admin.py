"""The portal in the admin: staff make a link for a client's people (its address shown once, on
the page that answers the form) and withdraw it; the list shows who made each, when it was
last opened and when it ends. What clients did through the portal is listed beside it."""

from datetime import timedelta

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import reverse

from omnium.clients import audit
from omnium.portal import links
from omnium.portal.models import PortalAction, PortalLink
from omnium.read_only_admin import ReadOnlyAdmin

LINK_MADE_TEMPLATE = "admin/portal/portallink/made.html"
VALID_FOR_DAYS = [(1, "1 day"), (7, "7 days"), (30, "30 days"), (90, "90 days")]


class PortalLinkForm(forms.ModelForm):
    valid_for_days = forms.TypedChoiceField(choices=VALID_FOR_DAYS, coerce=int, initial=7, label="Works for",
                                            help_text="The link stops working after this; you can withdraw it before.")

    class Meta:
        model = PortalLink
        fields = ["client", "note"]


@admin.register(PortalLink)
class PortalLinkAdmin(admin.ModelAdmin):
    form = PortalLinkForm
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

    def save_model(self, request, link, form, change):
        made, token = links.make(form.cleaned_data["client"], form.cleaned_data["note"],
                                 timedelta(days=form.cleaned_data["valid_for_days"]), by=request.user)
        link.pk, link.token_hash, link.expires_at, link.created_at = made.pk, made.token_hash, made.expires_at, made.created_at
        audit.record(request.user, [made.client], f"Portal link made: {made.note} (until {made.expires_at:%Y-%m-%d %H:%M} UTC)")
        request.portal_address = request.build_absolute_uri(reverse("portal-open", args=[token]))

    def response_add(self, request, link, post_url_continue=None):
        """The link's address, on this page only: it is nowhere else (only its digest is kept)."""
        address = getattr(request, "portal_address", None)
        if address is None:
            return super().response_add(request, link, post_url_continue)
        context = {**self.admin_site.each_context(request), "title": f"Portal link for {link.client.name}",
                   "opts": self.model._meta, "link": link, "address": address}
        return TemplateResponse(request, LINK_MADE_TEMPLATE, context)  # the admin's pages are never cached

    @admin.action(description="Withdraw the selected links", permissions=["delete"])
    def withdraw(self, request, queryset):
        withdrawn = [link for link in queryset.select_related("client") if link.revoked_at is None]
        for link in withdrawn:
            link.revoke(by=request.user)
            audit.record(request.user, [link.client], f"Portal link withdrawn: {link.note}")
        self.message_user(request, f"{len(withdrawn)} link(s) withdrawn: the sessions they opened end "
                                   "at their next page.", messages.SUCCESS)


@admin.register(PortalAction)
class PortalActionAdmin(ReadOnlyAdmin):
    """What clients did through their portal, with the link each came with."""

    deletable = False
    list_display = ["at", "client", "what", "link"]
    list_filter = ["client"]
    search_fields = ["client__name", "what"]
    list_select_related = ["client", "link"]
