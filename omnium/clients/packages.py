"""Applying a package: a destination subscribed, or a client entitled, to its feeds in one step.

Applying is idempotent: a file the destination or client already has is left as it is (its
template, shape and proof), one switched off is switched on again (applying the package says
"this client gets these files"), and only missing ones are created. Applying is also a copy,
not a link: changing the package later changes nobody's files. A package is what was sold;
adding a feed to it must not start pushing a feed a client never bought, and removing one must
not silently stop a client's delivery. Apply it again to add what the package gained.
"""

from dataclasses import dataclass

from django.db import transaction

from omnium.clients.models import Client, Destination, Entitlement, Package, Subscription


@dataclass(frozen=True)
class Applied:
    created: int = 0
    switched_on: int = 0
    already: int = 0

    def __str__(self):
        return f"{self.created} new, {self.switched_on} switched on again, {self.already} already there"


@transaction.atomic
def subscribe(package: Package, destination: Destination) -> Applied:
    """Subscribe `destination` to every file of the package (every country of a per-country feed)."""
    # The lock makes two people applying at once take turns, rather than both create a row.
    Destination.objects.select_for_update().filter(pk=destination.pk).first()
    existing = {s.definition_id: s for s in Subscription.objects.filter(destination=destination, filter="")}
    return _apply(package, existing, lambda definition: Subscription(destination=destination, definition=definition))


@transaction.atomic
def entitle(package: Package, client: Client) -> Applied:
    """Entitle `client` to pull every file of the package (every country of a per-country feed)."""
    Client.objects.select_for_update().filter(pk=client.pk).first()
    existing = {e.definition_id: e for e in Entitlement.objects.filter(client=client, filter="")}
    return _apply(package, existing, lambda definition: Entitlement(client=client, definition=definition))


def _apply(package: Package, existing: dict, new_row) -> Applied:
    counts = {"created": 0, "switched_on": 0, "already": 0}
    for definition in package.definitions.order_by("pk"):
        row = existing.get(definition.pk)
        outcome = "created" if row is None else "already" if row.active else "switched_on"
        counts[outcome] += 1
        if outcome != "already":
            row = row or new_row(definition)
            row.active = True
            row.full_clean()
            row.save()  # one by one: their save hooks owe the current files and publish pull files
    return Applied(**counts)
