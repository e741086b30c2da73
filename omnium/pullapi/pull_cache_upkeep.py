"""Pull cache destinations kept up by themselves: no `ensure_pull_cache` to forget.

A pull file froze when its Redis destination was missing (a Games loaded mid-event, an
own-shape entitlement added in the admin): the read path copied it from PostgreSQL once and
nothing updated that copy. So the destinations follow the records they derive from:
  - a Games created: its destinations, then a first build owed to each of its files (bulk lane);
  - an entitlement saved or deleted: that Games' destinations (its own-shape subscriptions);
  - a client saved (its shape may have changed): the destinations of every Games it is
    entitled in (a new shape is a new key prefix, so its files are published again);
  - the repair task (beat, every PULL_CACHE_REPAIR_S): every Games, for a hook that was missed
    (a crash between commit and hook, rows written in SQL).
Hooks run after commit: the destinations must see the committed records.
"""


from celery import current_app
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from omnium.clients.models import Client, Entitlement
from omnium.conf import omnium_setting
from omnium.games.models import Games
from omnium.messaging import hints
from omnium.pullapi.pull_cache_destinations import ensure_destinations, queue_missing
from omnium.routing import PREPARE_PULL_FILES


def repair_every_games() -> dict:
    """Ensure every Games' destinations and build its never-built pull files; returns a summary."""
    return {games.code: {**ensure_destinations(games), **queue_missing(games)}
            for games in Games.objects.order_by("code")}


def _ensure_after_commit(games_id: int) -> None:
    def ensure():
        games = Games.objects.filter(pk=games_id).first()
        if games is not None:
            ensure_destinations(games)

    transaction.on_commit(ensure)


def _games_created(sender, instance, created, raw=False, **kwargs):
    if created and not raw and omnium_setting("PULL_CACHE_AUTOMATIC"):
        _ensure_after_commit(instance.pk)
        transaction.on_commit(lambda: _send_quietly(PREPARE_PULL_FILES, instance.pk))


def _entitlement_changed(sender, instance, raw=False, **kwargs):
    if not raw and omnium_setting("PULL_CACHE_AUTOMATIC"):
        _ensure_after_commit(instance.definition.games_id)


def _client_changed(sender, instance, raw=False, **kwargs):
    if not raw and omnium_setting("PULL_CACHE_AUTOMATIC"):
        games_ids = Entitlement.objects.filter(client=instance).values_list("definition__games_id", flat=True)
        for games_id in sorted(set(games_ids)):
            _ensure_after_commit(games_id)


def _send_quietly(task_name: str, *args) -> None:
    """Without the broker, the repair task builds what is missing later."""
    hints.send_soon(task_name, lambda: current_app.send_task(task_name, args=args))


def connect() -> None:
    post_save.connect(_games_created, sender=Games, dispatch_uid="pullapi-games-created")
    post_save.connect(_entitlement_changed, sender=Entitlement, dispatch_uid="pullapi-entitlement-saved")
    post_delete.connect(_entitlement_changed, sender=Entitlement, dispatch_uid="pullapi-entitlement-deleted")
    post_save.connect(_client_changed, sender=Client, dispatch_uid="pullapi-client-saved")
