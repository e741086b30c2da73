"""Where a process group keeps its counts, so that one scrape sees every process on the host.

prometheus_client's multiprocess mode: a process started with PROMETHEUS_MULTIPROC_DIR keeps
every value in a memory-mapped file of that directory, one file per process id, and a
collector merges the files (counters and histograms summed). The library reads the variable
once, when it is first imported, so the directory must be chosen before that:

- an API process chooses it in omnium/wsgi.py, before the application (and the library) loads;
- a Celery worker cannot: Celery's command line imports the library (through Flower's plugin)
  before any code of ours runs. Its launcher chooses it instead (`omnium.metrics.launch`).

Each process group (a Celery worker with its prefork children, a granian worker) gets its own
directory `<OMNIUM_METRICS_DIR>/<kind>-<pid of the group's first process>`, made empty at its
start; `/metrics` on any API server of the host merges every directory under
OMNIUM_METRICS_DIR. A group's directory is removed when a later group starts and finds its
process gone: its totals then drop, which Prometheus reads as a counter reset (as after any
restart).
"""

import logging
import os
import shutil
import sys
from pathlib import Path

from django.conf import settings

ENVIRONMENT_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
LIBRARY = "prometheus_client"

logger = logging.getLogger(__name__)


def use_group_directory(kind: str) -> None:
    """Give this process (and the children it forks) its own metrics directory, unless its
    launcher chose one. Call it before prometheus_client is imported."""
    if in_multiprocess_mode():
        return
    if LIBRARY in sys.modules:
        raise RuntimeError(f"{ENVIRONMENT_VARIABLE} chosen after {LIBRARY} was imported: the counts of this "
                           "process would stay invisible to /metrics")
    root = Path(settings.OMNIUM["METRICS_DIR"])
    root.mkdir(parents=True, exist_ok=True)
    _remove_directories_of_dead_groups(root)
    own = root / f"{kind}-{os.getpid()}"
    shutil.rmtree(own, ignore_errors=True)  # a dead group's, whose process id came round again
    own.mkdir()
    os.environ[ENVIRONMENT_VARIABLE] = str(own)


def warn_unless_counted(process: str) -> None:
    """A process started without a metrics directory still works; say that /metrics misses it."""
    if not in_multiprocess_mode():
        logger.warning("%s has no %s: its counts stay invisible to /metrics (start it through "
                       "`python -m omnium.metrics.launch`)", process, ENVIRONMENT_VARIABLE)


def _remove_directories_of_dead_groups(root: Path) -> None:
    for directory in root.iterdir():
        pid = directory.name.rpartition("-")[2]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(directory, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def in_multiprocess_mode() -> bool:
    return bool(os.environ.get(ENVIRONMENT_VARIABLE))
