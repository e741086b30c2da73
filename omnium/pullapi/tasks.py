"""Celery tasks of the pull API: keeping its cache destinations and files in place."""

from celery import shared_task

from omnium.conf import omnium_setting
from omnium.games.models import Games
from omnium.pullapi import pull_cache_upkeep
from omnium.pullapi.pull_cache_destinations import ensure_destinations, queue_missing


@shared_task
def prepare_pull_files(games_id: int) -> dict:
    """A new Games' pull cache destinations, then a first build owed to each of its files
    (the builders make them, live files first)."""
    games = Games.objects.filter(pk=games_id).first()
    if games is None:
        return {}
    return {**ensure_destinations(games), **queue_missing(games)}


@shared_task
def repair_pull_caches() -> dict:
    """The backstop (beat): every Games' destinations and never-built pull files."""
    if not omnium_setting("PULL_CACHE_AUTOMATIC"):
        return {}
    return pull_cache_upkeep.repair_every_games()
