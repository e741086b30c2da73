"""Celery tasks of the pull API: keeping its cache destinations and files in place."""

from celery import shared_task

from omnium.conf import omnium_setting
from omnium.feeds.builder import build_file, files_of
from omnium.feeds.doc_keys import FileKey
from omnium.feeds.models import FeedDocument
from omnium.feeds.resolvers import PULL_DEFINITIONS
from omnium.games.models import Games
from omnium.pullapi import pull_cache_upkeep
from omnium.pullapi.pull_cache_destinations import build_missing, ensure_destinations


@shared_task
def prepare_pull_files(games_id: int) -> dict:
    """A new Games' files built once (later builds follow its changes), then its pull cache
    destinations and its split and public files."""
    games = Games.objects.filter(pk=games_id).first()
    if games is None:
        return {}
    standard = _build_never_built(games)
    return {"standard_files_built": standard, **ensure_destinations(games), **build_missing(games)}


def _build_never_built(games: Games) -> int:
    split_and_public = {feed_type for feed_type, _ in PULL_DEFINITIONS}
    wanted = [k for k in files_of(games.code) if FileKey.parse(k).feed_type not in split_and_public]
    built = set(FeedDocument.objects.filter(doc_key__in=wanted).values_list("doc_key", flat=True))
    for doc_key in wanted:
        if doc_key not in built:
            build_file(doc_key)
    return len(set(wanted) - built)


@shared_task
def repair_pull_caches() -> dict:
    """The backstop (beat): every Games' destinations and never-built pull files."""
    if not omnium_setting("PULL_CACHE_AUTOMATIC"):
        return {}
    return pull_cache_upkeep.repair_every_games()
