"""Where a process group keeps its counts, so that one scrape sees every process on the host.

prometheus_client's multiprocess mode: a process with PROMETHEUS_MULTIPROC_DIR keeps every
value in a memory-mapped file of that directory, one file per process id, and a collector
merges the files (counters and histograms summed). The library chooses how values are kept
when it is first imported, and Celery imports it before any hook of ours runs (Flower's CLI
plugin does), so `use_group_directory` chooses again, before any of Omnium's metric families
is made (they are made on first use: `families`).

Each process group (a Celery worker with its prefork children, a granian worker) gets its own
directory `<OMNIUM_METRICS_DIR>/<kind>-<pid of the group's first process>`, made empty at its
start; `/metrics` on any API server of the host merges every directory under
OMNIUM_METRICS_DIR. A group's directory is removed when a later group starts and finds its
process gone: its totals then drop, which Prometheus reads as a counter reset (as after any
restart).
"""

import os
import shutil
from pathlib import Path

from django.conf import settings
from prometheus_client import values

from omnium.metrics import families

ENVIRONMENT_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def use_group_directory(kind: str) -> None:
    """Give this process (and the children it forks) its own metrics directory, unless its
    launcher chose one."""
    if os.environ.get(ENVIRONMENT_VARIABLE):
        return
    if families.any_made():
        raise RuntimeError(f"{ENVIRONMENT_VARIABLE} set after a metric was made: the counts of this "
                           "process would stay invisible to /metrics")
    root = Path(settings.OMNIUM["METRICS_DIR"])
    root.mkdir(parents=True, exist_ok=True)
    _remove_directories_of_dead_groups(root)
    own = root / f"{kind}-{os.getpid()}"
    shutil.rmtree(own, ignore_errors=True)  # a dead group's, whose process id came round again
    own.mkdir()
    os.environ[ENVIRONMENT_VARIABLE] = str(own)
    values.ValueClass = values.get_value_class()


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

