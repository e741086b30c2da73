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

import socket
import sys
import time

from omnium import localrun


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: localrun.LocalProcess, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not process.running():
            raise RuntimeError(f"{process.name} exited; see {process.log_path}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"{process.name} did not listen on {port} within {timeout} s")


def start_api(port: int, name: str, env: dict, log_dir=None, **options) -> localrun.LocalProcess:
    """A pull API server process (its own process group), answering once this returns."""
    process = localrun.LocalProcess(granian_command(port, **options), name, env, log_dir)
    wait_for_port(port, process)
    return process
