"""The feed definitions a Games starts with: one per standard feed type."""

from omnium.feeds.models import FeedDefinition
from omnium.feeds.resolvers import STANDARD_DEFINITIONS


def add_standard_definitions(games) -> list[FeedDefinition]:
    """Define every standard file for `games` (calendar, medals, results…, one country file
    per NOC); definitions it already has are kept as they are."""
    return FeedDefinition.objects.bulk_create(
        [FeedDefinition(games=games, feed_type=t, name=n, per_noc=p) for t, n, p in STANDARD_DEFINITIONS],
        ignore_conflicts=True,
    )
