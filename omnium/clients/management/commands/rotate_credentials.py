"""`manage.py rotate_credentials`: every destination's stored credentials encrypted again with
the first key of OMNIUM_CREDENTIAL_KEYS, the step between putting a new key first and removing
the old one (omnium/clients/credentials.py).

A row is written only if it still holds what was read (compare and set): credentials staff
save meanwhile are never overwritten with the rotated old ones. A row that no key of the ring
decrypts is named and left as it is; so is one that kept changing. Either fails the command,
once every other row is done. Last, it says whether the first key alone now reads every row,
that is, whether the older keys may be removed.
"""

from django.core.management.base import BaseCommand, CommandError

from omnium.clients import credentials
from omnium.clients.models import Destination

ATTEMPTS_PER_ROW = 3  # a row changed this many times between our read and our write is left


class Command(BaseCommand):
    help = "Re-encrypt every destination's credentials with the first key of OMNIUM_CREDENTIAL_KEYS."

    def handle(self, **options):
        outcomes = {"rotated": [], "unreadable": [], "kept changing": [], "gone": []}
        for pk, stored in _stored_credentials():
            outcomes[_rotate(pk, bytes(stored))].append(pk)
        self.stdout.write(f"re-encrypted the credentials of {len(outcomes['rotated'])} destination(s) with the first key")
        problems = [f"{why}, left as stored: {_named(pks)}" for why, pks in outcomes.items()
                    if why in ("unreadable", "kept changing") and pks]
        if problems:
            raise CommandError("; ".join(problems) + ". Every other destination was re-encrypted.")
        older = [pk for pk, stored in _stored_credentials() if not credentials.readable_with_the_first_key_alone(stored)]
        if older:
            raise CommandError(f"still encrypted with an older key, saved meanwhile by a process with the old ring: "
                               f"{_named(older)}. Restart every admin and delivery worker with the new ring, then "
                               f"run this again; keep the older keys until it passes.")
        self.stdout.write("the first key alone reads every destination's credentials: the older keys may be removed")


def _stored_credentials():
    return Destination.objects.exclude(credentials_encrypted=b"").order_by("pk").values_list(
        "pk", "credentials_encrypted")


def _rotate(pk: int, stored: bytes) -> str:
    """One row re-encrypted, unless someone else wrote it since `stored` was read: then it is
    read again."""
    for _ in range(ATTEMPTS_PER_ROW):
        try:
            fresh = credentials.rotate(stored)
        except credentials.CredentialError:
            return "unreadable"
        if Destination.objects.filter(pk=pk, credentials_encrypted=stored).update(credentials_encrypted=fresh):
            return "rotated"
        stored = bytes(Destination.objects.filter(pk=pk).values_list("credentials_encrypted", flat=True).first() or b"")
        if not stored:
            return "gone"  # deleted, or its credentials forgotten, meanwhile
    return "kept changing"


def _named(pks: list[int]) -> str:
    rows = Destination.objects.filter(pk__in=pks).select_related("client").order_by("pk")
    return ", ".join(f"#{row.pk} {row.client.name} / {row.name}" for row in rows)
