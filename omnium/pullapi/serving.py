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


def granian_command(port: int, *, workers: int = 1, target: str = "omnium.wsgi:application",
                    host: str = "127.0.0.1", static_root: str | None = None) -> list[str]:
    """`static_root` (after `collectstatic`): granian serves the admin's CSS and scripts itself,
    so static files never go through Django and cost the pull API nothing."""
    static = ["--static-path-route", "/static", "--static-path-mount", static_root] if static_root else []
    return [
        sys.executable, "-m", "granian", "--interface", "wsgi", "--host", host, "--port", str(port),
        "--workers", str(workers), "--blocking-threads", "1", "--backpressure", "128",
        "--no-access-log", "--log-level", "warning", *static, target,
    ]
