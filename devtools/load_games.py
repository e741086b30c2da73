import time

from django.core.management.base import BaseCommand, CommandError

from devtools.generator import SCALES, Generator, delete_games, games_code
from omnium.games.models import Games


class Command(BaseCommand):
    help = "Generate a Games deterministically and print its code."

    def add_arguments(self, parser):
        parser.add_argument("--scale", choices=sorted(SCALES), default="small")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--replace", action="store_true", help="delete the Games of this scale and seed first")

    def handle(self, scale, seed, replace, **options):
        code = games_code(scale, seed)
        if Games.objects.filter(code=code).exists():
            if not replace:
                raise CommandError(f"Games {code} already exists; pass --replace to generate it again")
            delete_games(code)
        started = time.monotonic()
        progress = lambda message: self.stderr.write(f"  load_games {code}: {message} ({time.monotonic() - started:.1f} s)")
        Generator(scale, seed, progress).run()
        self.stderr.write(f"  load_games {code}: done in {time.monotonic() - started:.1f} s")
        self.stdout.write(code)
