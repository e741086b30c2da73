"""A settings change reaches the client at once, not at the file's next content change.

Changing how a subscription shapes or names its files (transform, file name template, marks,
filter), or where and how its destination sends (config, credentials), makes every file of
that subscription or destination owed again: `force_resend` on its rows, then a kick. The
flag coalesces (ten edits in a row are one resend), the sender sends the file's current
version through the normal queue, and the proof records it.

A destination edit also forgets its back-off: the edit is usually the fix (a corrected URL,
new credentials, the SFTP host key a person has checked), and it should be tried at once,
not in five minutes.
"""

from django.db import transaction
from django.db.models.signals import post_save, pre_save

from omnium.clients.models import Destination, Subscription
from omnium.delivery import health
from omnium.delivery.kicks import kick
from omnium.delivery.models import DeliveryState, SenderState

SUBSCRIPTION_SHAPE = ("transform", "file_name_template", "include_version", "include_result_marks", "filter")
DESTINATION_SENDING = ("kind", "config", "credentials_encrypted")


def _changed(instance, fields) -> bool:
    """Whether a save of an existing row changes any of `fields`."""
    if instance.pk is None:
        return False
    before = type(instance).objects.filter(pk=instance.pk).values(*fields).first()
    if before is None:
        return False
    return any(_comparable(before[f]) != _comparable(getattr(instance, f)) for f in fields)


def _comparable(value):
    return bytes(value) if isinstance(value, memoryview) else value


def resend_subscription(subscription_id: int) -> int:
    """Owe every file of the subscription again; returns how many."""
    states = DeliveryState.objects.filter(subscription_id=subscription_id, subscription__active=True)
    return _resend(states, "subscription_changed")


def resend_destination(destination_id: int) -> int:
    """Owe every file of the destination again and try at once; returns how many."""
    SenderState.objects.filter(pk=destination_id).update(retry_at=None)
    states = DeliveryState.objects.filter(destination_id=destination_id, subscription__active=True)
    return _resend(states, "destination_changed", destination_id)


def _resend(states, event: str, destination_id: int | None = None) -> int:
    destinations = set(states.values_list("destination_id", flat=True))
    count = states.update(force_resend=True)
    for owed_destination in destinations | ({destination_id} - {None}):
        health.record_event(event, owed_destination, files=count)
        kick(owed_destination)
    return count


def _resend_when_changed(model, fields, resend) -> None:
    """After a save of `model` that changed any of `fields`, `resend(pk)` once it commits."""
    label = model._meta.label_lower

    def note(sender, instance, raw=False, **kwargs):
        instance._resend_after_save = not raw and _changed(instance, fields)

    def resend_after_commit(sender, instance, created, **kwargs):
        if getattr(instance, "_resend_after_save", False):
            transaction.on_commit(lambda: resend(instance.pk))

    pre_save.connect(note, sender=model, weak=False, dispatch_uid=f"delivery-note-change-{label}")
    post_save.connect(resend_after_commit, sender=model, weak=False, dispatch_uid=f"delivery-resend-{label}")


_resend_when_changed(Subscription, SUBSCRIPTION_SHAPE, resend_subscription)
_resend_when_changed(Destination, DESTINATION_SENDING, resend_destination)
