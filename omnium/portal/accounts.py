"""The client's own people sign in to its portal with a user name and password of their own.

A person who came with a link makes their sign-in from the portal (the link is the invitation,
and the sign-in belongs to that link's client); from then on they need no link. The sign-in is
a Django user who is not staff, bound to one client (`PortalAccount`), so the admin never
opens for it, and a staff user has no portal unless staff made one for it (they cannot here).
Sign-ins go through Django's authentication with django-axes' lock-out and the process's
budget of password checks, as the admin's do; staff switch a sign-in off in the admin.
"""

from django.contrib import auth, messages
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters

from omnium.portal import links
from omnium.portal.access import portal_page, record
from omnium.portal.models import PortalAccount
from omnium.staff.site import over_budget_refusal


class PortalSignInForm(AuthenticationForm):
    def confirm_login_allowed(self, user):
        super().confirm_login_allowed(user)
        account = PortalAccount.objects.select_related("client").filter(user=user).first()
        if account is None:  # a staff member's password opens the admin, not a portal
            raise self.get_invalid_login_error()
        why = account.refusal()
        if why:
            raise ValidationError(why, code="inactive")


@sensitive_post_parameters("password")
def sign_in(request):
    refusal = over_budget_refusal(request)
    if refusal:
        return refusal
    form = PortalSignInForm(request, data=request.POST if request.method == "POST" else None)
    if form.is_valid():
        links.close(request.session)  # the account, not a link, is who this is from now on
        auth.login(request, form.get_user())
        return redirect("portal-home")
    return render(request, "portal/sign_in.html", {"form": form})


@sensitive_post_parameters("password1", "password2")
@portal_page
def make_sign_in(request, client):
    visitor = request.portal_visitor
    if visitor.link is None:
        messages.error(request, "You are signed in already: a sign-in is made by someone who came with a link.")
        return redirect("portal-home")
    form = UserCreationForm(request.POST if request.method == "POST" else None)
    if form.is_valid():
        user = form.save()  # not staff: the admin never opens for it
        PortalAccount.objects.create(user=user, client=client, made_with=visitor.link)
        record(request, f"made the sign-in {user.get_username()}")
        return redirect("portal-home")
    return render(request, "portal/make_sign_in.html", {"client": client, "form": form})


def sign_out(request) -> None:
    """The visitor leaves: a link's session forgets the link, an account signs out."""
    if links.SESSION_KEY in request.session:
        links.close(request.session)
    elif hasattr(request.user, "portal_account"):
        auth.logout(request)
