"""Who may open a client's portal (a link staff made, or an account of the client's own people),
and what they did there."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from omnium.clients.models import Client


class PortalLink(models.Model):
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="portal_links")
    note = models.CharField(max_length=100, help_text="Whom the link is for, e.g. “Acme's on-call engineers”.")
    # The link's secret is shown once, when it is made; only its SHA-256 is kept, so neither a
    # database dump nor a staff member reading this row can open the portal.
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", editable=False)
    expires_at = models.DateTimeField()
    last_opened_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", editable=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.client.name}: {self.note}"

    def refusal(self) -> str:
        """Why the link opens nothing now, in words for its holder; "" while it works."""
        if self.revoked_at is not None:
            return "This link was withdrawn."
        if self.expires_at <= timezone.now():
            return "This link has expired."
        if not self.client.active:
            return "This client's service is switched off."
        return ""

    def revoke(self, by=None) -> None:
        if self.revoked_at is None:
            self.revoked_at, self.revoked_by = timezone.now(), by
            self.save(update_fields=["revoked_at", "revoked_by"])


class PortalAccount(models.Model):
    """A sign-in of one of the client's own people: a Django user who is not staff, bound to one
    client. Made by a person who came with a link (the link is the invitation), so that they
    need no new link once it expires; staff switch an account off in the admin."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="portal_account")
    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="portal_accounts")
    made_with = models.ForeignKey(PortalLink, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                  editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["client__name", "user__username"]

    def __str__(self):
        return f"{self.user.get_username()} ({self.client.name})"

    def refusal(self) -> str:
        """Why this account opens nothing now, in words for its holder; "" while it works."""
        if not self.user.is_active:
            return "This sign-in was switched off. Ask your account manager."
        if not self.client.active:
            return "This client's service is switched off."
        return ""


class PortalAction(models.Model):
    """What a client's people did through the portal: its audit log, shown to them on the
    portal and to staff in the admin. The admin's own history names only staff; this names the
    link or the account the visitor came with."""

    client = models.ForeignKey(Client, on_delete=models.CASCADE, related_name="portal_actions")
    link = models.ForeignKey(PortalLink, null=True, on_delete=models.SET_NULL, related_name="actions")
    account = models.ForeignKey(PortalAccount, null=True, on_delete=models.SET_NULL, related_name="actions")
    at = models.DateTimeField(auto_now_add=True)
    what = models.CharField(max_length=200)  # "paused acme webhook: deploying"

    class Meta:
        ordering = ["-at", "-pk"]

    def __str__(self):
        return f"{self.client.name}: {self.what}"

    @property
    def by(self) -> str:
        if self.account_id:
            return f"signed in as {self.account.user.get_username()}"
        return f"link “{self.link.note}”" if self.link_id else ""
