"""Who is looking at the portal, and for which client: every portal page asks here.

A visitor comes with a link staff made (`links`) or signs in with an account of the client's
own people (`accounts`). Either way the client is taken from that, never from the URL, so a
visitor sees that client's data and no other whatever address it types; and either is checked
again on every request, so a withdrawn link or a switched-off sign-in ends its sessions at
their next page.
"""

from dataclasses import dataclass
from functools import wraps

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import render

from omnium.clients.models import Client
from omnium.portal import links
from omnium.portal.models import PortalAccount, PortalAction, PortalLink

NO_VISITOR = "Open the portal with the link you were given, or sign in."


@dataclass(frozen=True)
class Visitor:
    client: Client
    link: PortalLink | None = None
    account: PortalAccount | None = None


def visitor_of(request) -> tuple[Visitor | None, str]:
    """The visitor of this request, if its link or account still works; or None and why not."""
    if links.SESSION_KEY in request.session:
        link, why = links.link_of(request.session)
        return (Visitor(link.client, link=link), "") if link else (None, why)
    if request.user.is_authenticated:
        account = PortalAccount.objects.select_related("client", "user").filter(user=request.user).first()
        if account is not None:
            why = account.refusal()
            return (None, why) if why else (Visitor(account.client, account=account), "")
    return None, NO_VISITOR


def refused(request, why: str, status_code: int = 403) -> HttpResponse:
    return render(request, "portal/refused.html", {"why": why}, status=status_code)


def portal_page(view):
    """The view, given the visitor's client; a refusal page without a visitor."""

    @wraps(view)
    def checked(request, *args, **kwargs):
        visitor, why = visitor_of(request)
        if visitor is None:
            return refused(request, why)
        request.portal_visitor = visitor
        response = view(request, visitor.client, *args, **kwargs)
        response["Cache-Control"] = "no-store"  # a client's proofs and new secrets stay out of every cache
        return response

    return checked


def record(request, what: str, say: bool = True) -> None:
    """`what` the visitor did, in the portal's audit log (and said on the next page)."""
    visitor = request.portal_visitor
    PortalAction.objects.create(client=visitor.client, link=visitor.link, account=visitor.account, what=what[:200])
    if say:
        messages.success(request, f"Done: {what}.")
