"""A settings change reaches the client at once, not at the file's next content change.

Changing how a subscription shapes or names its files (transform, file name template, marks,
filter), where and how its destination sends (config, credentials), or a client's shape (for
the subscriptions that follow it), makes every file of that subscription, destination or
client owed again: `force_resend` on its rows, then a kick. The
flag coalesces (ten edits in a row are one resend), the sender sends the file's current
version through the normal queue, and the proof records it.

A destination edit also forgets its back-off: the edit is usually the fix (a corrected URL,
new credentials, the SFTP host key a person has checked), and it should be tried at once,
not in five minutes.
"""

from django.db import transaction
from django.db.models import Q
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver

from omnium.clients.models import Client, Destination, Subscription
from omnium.delivery import health
from omnium.delivery.kicks import kick_soon
from omnium.delivery.models import DeliveryState, SenderState

SUBSCRIPTION_SHAPE = ("transform", "file_name_template", "include_version", "include_result_marks", "filter")
DESTINATION_SENDING = ("kind", "config", "credentials_encrypted")
CLIENT_SHAPE = ("transform", "include_version", "include_result_marks")
# A subscription follows a client's shape field where its own is blank.
FOLLOWS_CLIENT = {"transform": Q(subscription__transform=""),
                  "include_version": Q(subscription__include_version__isnull=True),
                  "include_result_marks": Q(subscription__include_result_marks__isnull=True)}


def _changed(instance, fields) -> bool:
    """Whether a save of an existing row changes any of `fields`."""
    return bool(_changed_fields(instance, fields))


def _changed_fields(instance, fields) -> list[str]:
    """Which of `fields` a save of an existing row changes."""
    if instance.pk is None:
        return []
    before = type(instance).objects.filter(pk=instance.pk).values(*fields).first()
    if before is None:
        return []
    return [f for f in fields if _comparable(before[f]) != _comparable(getattr(instance, f))]


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


def resend_client_shape(client_id: int, changed_fields) -> int:
    """Owe again every file of the client's subscriptions that follow a changed shape field."""
    follows = Q()
    for field in changed_fields:
        follows |= FOLLOWS_CLIENT[field]
    states = DeliveryState.objects.filter(follows, destination__client_id=client_id, subscription__active=True)
    return _resend(states, "client_shape_changed")


def _resend(states, event: str, destination_id: int | None = None) -> int:
    destinations = set(states.values_list("destination_id", flat=True))
    count = states.update(force_resend=True)
    owed = destinations | ({destination_id} - {None})
    for owed_destination in owed:
        health.record_event(event, owed_destination, files=count)
    kick_soon(owed)
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


@receiver(pre_save, sender=Client, dispatch_uid="delivery-client-shape-changed")
def _note_client_shape_change(sender, instance, raw=False, **kwargs):
    instance._shape_changed = [] if raw else _changed_fields(instance, CLIENT_SHAPE)


@receiver(post_save, sender=Client, dispatch_uid="delivery-resend-client-shape")
def _resend_client_shape(sender, instance, created, **kwargs):
    changed = getattr(instance, "_shape_changed", [])
    if changed:
        transaction.on_commit(lambda: resend_client_shape(instance.pk, changed))
