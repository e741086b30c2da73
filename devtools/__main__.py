"""`python -m devtools <command> [options]`: the demo's and benchmarks' data commands.

    python -m devtools load_games --scale small|asian-games --seed N [--replace]
    python -m devtools replay_day --games ag1 --day 3 --speed 300 [--max-seconds 60]

They are Django management commands kept out of the product's apps, so a production host
never has them; this runs them with the product's settings.
"""

import os
import sys

COMMANDS = {"load_games": "devtools.load_games", "replay_day": "devtools.replay_day"}


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] not in COMMANDS:
        sys.exit(f"usage: python -m devtools {{{'|'.join(COMMANDS)}}} [options]  (--help after a command)")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")
    import django

    django.setup()
    from importlib import import_module

    command = import_module(COMMANDS[argv[1]]).Command()
    command.run_from_argv(["python -m devtools", *argv[1:]])


if __name__ == "__main__":
    main(sys.argv)
