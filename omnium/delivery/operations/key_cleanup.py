"""Redis keys go with what they belong to.

A Redis destination's keys (its key prefix + the path it last sent) are deleted when their
subscription is deleted or retired (made inactive), and so when its destination, client or
Games is deleted (each deletes its subscriptions), and when its key prefix changes (a pull
client's new shape is a new prefix; the files are then sent again under the new one). A
deleted destination's health keys go too. Otherwise the pull cache kept serving files nothing
updates, and Redis grew with every destination ever made. Deletion happens after commit: a rolled-back delete keeps its keys.
"""

import logging

import redis
from django.db import transaction
from django.db.models.signals import pre_delete, pre_save
from django.dispatch import receiver

from omnium import redis_keys
from omnium.clients.credentials import CredentialError
from omnium.clients.models import Destination, Subscription
from omnium.delivery.models import DeliveryState
from omnium.redis_client import redis_client
from omnium.transports import TransportError, registry

log = logging.getLogger(__name__)


def published_keys(subscriptions) -> dict[int, list[str]]:
    """destination id -> the Redis keys its subscriptions among `subscriptions` wrote."""
    keys: dict[int, list[str]] = {}
    states = (DeliveryState.objects.filter(subscription__in=subscriptions, destination__kind="redis")
              .exclude(sent_path="").values_list("destination_id", "destination__config", "sent_path"))
    for destination_id, config, path in states:
        keys.setdefault(destination_id, []).append((config or {}).get("key_prefix", "feed:") + path)
    return keys


def delete_after_commit(keys_by_destination: dict[int, list[str]]) -> None:
    for destination_id, keys in keys_by_destination.items():
        destination = Destination.objects.filter(pk=destination_id).first()
        if destination is None or not keys:
            continue
        try:
            config, credentials = destination.config, destination.credentials
        except CredentialError:  # a process without the keys (a build worker deleting a Games)
            log.warning("cannot delete %d retired keys of destination %s: this process holds no credential keys",
                        len(keys), destination_id)
            continue
        transaction.on_commit(lambda c=config, s=credentials, k=keys: _delete(c, s, k))


def _delete(config: dict, credentials: dict, keys: list[str]) -> None:
    """Through the destination's own transport: its deadline and the address policy hold."""
    try:
        with registry.transport_for("redis", config, credentials) as transport:
            transport.delete_keys(keys)
    except TransportError:  # the read path's copies expire anyway; a destination's would stay
        log.warning("could not delete %d retired pull cache keys at %s", len(keys), config.get("url"), exc_info=True)


@receiver(pre_delete, sender=Subscription, dispatch_uid="delivery-keys-of-deleted-subscription")
def _subscription_deleted(sender, instance, **kwargs):
    delete_after_commit(published_keys([instance.pk]))


@receiver(pre_save, sender=Subscription, dispatch_uid="delivery-keys-of-retired-subscription")
def _subscription_retired(sender, instance, raw=False, **kwargs):
    if not raw and instance.pk and not instance.active and \
            Subscription.objects.filter(pk=instance.pk, active=True).exists():
        delete_after_commit(published_keys([instance.pk]))


@receiver(pre_save, sender=Destination, dispatch_uid="delivery-keys-under-a-former-prefix")
def _prefix_changed(sender, instance, raw=False, **kwargs):
    if raw or not instance.pk or instance.kind != "redis":
        return
    before = Destination.objects.filter(pk=instance.pk, kind="redis").values_list("config", flat=True).first()
    if before is not None and (before or {}).get("key_prefix") != (instance.config or {}).get("key_prefix"):
        # Read before the save: the keys are named by the prefix they were written under.
        delete_after_commit(published_keys(instance.subscriptions.all()))


@receiver(pre_delete, sender=Destination, dispatch_uid="delivery-health-keys-of-deleted-destination")
def _destination_deleted(sender, instance, **kwargs):
    key = redis_keys.destination_health(instance.pk)
    transaction.on_commit(lambda: _quietly_delete(key))


def _quietly_delete(*keys: str) -> None:
    try:
        redis_client().delete(*keys)
    except redis.RedisError:
        log.warning("could not delete %s", keys, exc_info=True)
