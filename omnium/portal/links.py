"""Portal links: made by staff, opened by a client's people, checked on every portal request.

A link is a random secret (256 bits) whose SHA-256 is kept, as the pull keys are, rather than
a signed token: a row can be withdrawn at once, and the database never holds a usable link.
Opening it puts the link's id in the visitor's session and sends the browser on to the portal
without the secret in its address (so it stays out of history and Referer headers); every
later request checks the link again, so a withdrawn or expired link closes sessions it opened.
"""

import hashlib
import secrets
from datetime import timedelta

from django.utils import timezone

from omnium.clients.models import Client
from omnium.portal.models import PortalLink

SESSION_KEY = "omnium_portal_link"
NOT_KNOWN = "This link is not known. Ask your account manager for a new one."


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def make(client: Client, note: str, valid_for: timedelta, by=None) -> tuple[PortalLink, str]:
    """A new saved link and its secret: the only time the secret exists."""
    token = secrets.token_urlsafe(32)
    link = PortalLink.objects.create(client=client, note=note, token_hash=digest(token), created_by=by,
                                     expires_at=timezone.now() + valid_for)
    return link, token


def open_link(session, token: str) -> tuple[PortalLink | None, str]:
    """The link `token` opens, now bound to `session`; or None and why not."""
    link = PortalLink.objects.select_related("client").filter(token_hash=digest(token)).first()
    if link is None:
        return None, NOT_KNOWN
    refusal = link.refusal()
    if refusal:
        return None, refusal
    session.cycle_key()  # a new session id: whatever the browser held before is not this one
    session[SESSION_KEY] = link.pk
    PortalLink.objects.filter(pk=link.pk).update(last_opened_at=timezone.now())
    return link, ""


def link_of(session) -> tuple[PortalLink | None, str]:
    """The link that opened this session, if it still works; or None and why not."""
    link_id = session.get(SESSION_KEY)
    link = PortalLink.objects.select_related("client").filter(pk=link_id).first() if link_id else None
    if link is None:
        return None, "Open the portal with the link you were given."
    refusal = link.refusal()
    if refusal:
        session.pop(SESSION_KEY, None)
    return (None, refusal) if refusal else (link, "")


def close(session) -> None:
    session.pop(SESSION_KEY, None)
