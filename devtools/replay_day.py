import json

from django.core.management.base import BaseCommand, CommandError

from devtools.replay import plan_day, play
from omnium.games.models import Games


class Command(BaseCommand):
    help = "Play a day of a Games' changes through the workflow commands; prints a JSON summary."

    def add_arguments(self, parser):
        parser.add_argument("--games", required=True)
        parser.add_argument("--day", type=int, required=True, help="1 = the opening day")
        parser.add_argument("--speed", type=float, default=60.0, help="times faster than real time")
        parser.add_argument("--max-seconds", type=float, default=None, help="stop after this much wall time")
        parser.add_argument("--seed", type=int, default=1)

    def handle(self, games, day, speed, max_seconds, seed, **options):
        found = Games.objects.filter(code=games).first()
        if found is None:
            raise CommandError(f"no Games with code {games!r}")
        days = (found.ends_on - found.starts_on).days + 1
        if not 1 <= day <= days:
            raise CommandError(f"--day must be between 1 and {days} for {games}")
        if speed <= 0:
            raise CommandError("--speed must be greater than 0")
        steps = plan_day(found, day, seed)
        self.stderr.write(f"  replay_day {games} day {day}: {len(steps)} changes planned, speed x{speed:g}")
        progress = lambda r: self.stderr.write(
            f"  replay_day: {r.steps_played}/{r.steps_planned} changes, {r.games_seconds / 3600:.1f} h of play"
        )
        report = play(steps, speed, max_seconds, progress)
        self.stdout.write(json.dumps({"games": games, "day": day, "speed": speed, **report.as_dict()}))
