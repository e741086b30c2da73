"""The production server of the pull API: granian, WSGI, one blocking thread per worker.

Chosen by measurement on this machine (2 cores): a bare Django view reading one Redis key
served about 6,000 304s a second under granian with one blocking thread per worker, about
4,000 with granian's default thread pool and 3,400 under gunicorn's sync workers (issue 5's
figures; bench/pull.py reproduced ~6,800 for the baseline on a quiet machine). One thread per
worker keeps each request on one core without GIL hand-offs; run one worker per core. A slow
PostgreSQL read (a Redis miss) holds only its own worker, and at most PULL_DATABASE_READS of
them read at once.

    granian --interface wsgi --workers <cores> --blocking-threads 1 --backpressure 128 \\
        --host 0.0.0.0 --port 8000 --no-access-log \\
        --static-path-route /static --static-path-mount var/static omnium.wsgi:application
"""

import sys

# An API process has two threads that matter: the request thread, and the invalidation listener
# (invalidations.py), which must run the moment Redis says a kept file changed. With CPython's
# default 5 ms switch interval the listener waited up to 200 ms for the GIL while requests ran
# back to back; at 0.5 ms it takes its turn at once (bench/pull.py, same machine: staleness p50
# 14 ms -> 2 ms, the slowest tenth of versions 170-400 ms -> 35-140 ms; requests a second unchanged).
SWITCH_INTERVAL_S = 0.0005


def prepare_api_process() -> None:
    """Called once in each API process, before the application loads."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def granian_command(port: int, *, workers: int = 1, threads: int = 1, target: str = "omnium.wsgi:application",
                    host: str = "127.0.0.1", static_root: str | None = None, launcher: tuple[str, ...] = ()) -> list[str]:
    """`static_root` (after `collectstatic`): granian serves the admin's CSS and scripts itself,
    so static files never go through Django and cost the pull API nothing."""
    static = ["--static-path-route", "/static", "--static-path-mount", static_root] if static_root else []
    return [
        *launcher, sys.executable, "-m", "granian", "--interface", "wsgi", "--host", host, "--port", str(port),
        "--workers", str(workers), "--blocking-threads", str(threads), "--backpressure", "128",
        "--no-access-log", "--log-level", "warning", *static, target,
    ]
