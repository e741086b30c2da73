import json

from django.core.management.base import BaseCommand, CommandError

from omnium.feeds.builder import build_file, files_of
from omnium.games.models import Games


class Command(BaseCommand):
    help = "Build every file of a Games now (a new version only where the content changed)."

    def add_arguments(self, parser):
        parser.add_argument("--games", required=True, help="the Games code, e.g. ag1")

    def handle(self, games, **options):
        if not Games.objects.filter(code=games).exists():
            raise CommandError(f"no Games with code {games!r}")
        results = []
        for doc_key in files_of(games):
            result = build_file(doc_key)
            results.append(result)
            self.stderr.write(f"  {doc_key}: {result.outcome} seq={result.seq} {result.size} bytes {result.seconds:.3f} s")
        summary = {
            "games": games,
            "files": len(results),
            "new_versions": sum(r.outcome == "new_version" for r in results),
            "unchanged": sum(r.outcome == "unchanged" for r in results),
            "bytes_written": sum(r.size for r in results),
            "seconds": round(sum(r.seconds for r in results), 3),
        }
        self.stdout.write(json.dumps(summary))
