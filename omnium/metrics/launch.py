"""Start a process whose counts /metrics sees:

    python -m omnium.metrics.launch <kind> <command> [arguments...]

e.g. `python -m omnium.metrics.launch worker celery -A omnium worker -Q build.live`. The
process group's metrics directory is prepared here (`process_files.use_group_directory`),
before the command starts and imports prometheus_client; then this process becomes the
command (exec keeps the process id, so the directory stays named after the live process).
"""

import os
import sys

USAGE = "usage: python -m omnium.metrics.launch <kind> <command> [arguments...]"


def main(arguments: list[str]) -> None:
    if len(arguments) < 2:
        sys.exit(USAGE)
    kind, command = arguments[0], arguments[1:]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")
    from omnium.metrics.process_files import use_group_directory

    use_group_directory(kind)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
