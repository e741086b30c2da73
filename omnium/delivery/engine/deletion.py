"""Deleting a destination, or its client, while its senders run.

Django deletes a destination's attempt log and sender state first and the destination
last, in one transaction. A sender that inserted an attempt row in between made the delete
fail at commit with a foreign key violation (the admin's delete page answered 500), or got
the violation itself and failed its task. So the delete locks the destination's row before
it deletes anything: a sender's next insert naming the destination waits for the delete to
commit and then fails, and the sender, finding its destination gone, ends quietly.
"""

import logging

from django.db import IntegrityError, connection
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from omnium.clients.models import Destination

log = logging.getLogger(__name__)


@receiver(pre_delete, sender=Destination)
def _hold_off_senders(sender, instance, **kwargs):
    # pre_delete runs inside the deleting transaction, before the related rows go.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM clients_destination WHERE id = %s FOR UPDATE", [instance.pk])


def unless_deleted(destination_id: int, work, otherwise):
    """`work()`, or `otherwise` if the destination was deleted while it ran (the foreign key
    error of the sender's next insert says so). Any other integrity error is raised."""
    try:
        return work()
    except IntegrityError:
        if Destination.objects.filter(pk=destination_id).exists():
            raise
        log.info("destination %s was deleted while its sender ran; stopping", destination_id)
        return otherwise
