import json

from django.core.management.base import BaseCommand, CommandError

from omnium.games.models import Games
from omnium.pullapi import pull_cache_destinations


class Command(BaseCommand):
    help = ("Set up the Redis destinations that fill the pull cache for a Games (shared files, public "
            "documents, each client's own shape) and build its split and public files once. Safe to repeat.")

    def add_arguments(self, parser):
        parser.add_argument("--games", required=True, help="the Games code, e.g. ag1")
        parser.add_argument("--no-build", action="store_true", help="only set up the destinations")

    def handle(self, games, no_build=False, **options):
        found = Games.objects.filter(code=games).first()
        if found is None:
            raise CommandError(f"no Games with code {games!r}")
        summary = {"games": games, **pull_cache_destinations.ensure_destinations(found)}
        if not no_build:
            summary.update(pull_cache_destinations.build_missing(found))
        self.stdout.write(json.dumps(summary))
