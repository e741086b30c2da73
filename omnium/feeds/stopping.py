"""A build worker that is stopping (a warm shutdown: SIGTERM to its main process): its build
loops take no next file after the one in hand and wake another worker for what is due; a build
still running after OMNIUM_BUILD_STOP_DEADLINE_S is logged, counted as a failed build of its
file (three in a row open the file's build alert) and its claim given back, so another worker
builds it at once instead of after this process's SIGKILL and the claim's expiry.

Celery's warm shutdown waits for the tasks in hand; without this, a build loop would go on
claiming files for up to its 20 s (BUILD_LOOP_S). The build itself is not interrupted: a build
that ends after its claim was given back commits nothing twice (a claim token that is not ours
any more finishes nothing, and a version older than the file's is superseded).
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from celery.signals import worker_process_init, worker_ready, worker_shutting_down
from django.db import connection

from omnium.conf import omnium_setting
from omnium.feeds import build_alerts, debounce
from omnium.workers.warm_stop import WarmStop

log = logging.getLogger(__name__)

_builds = WarmStop("builds")  # by file (doc key)
_claims: dict[str, debounce.Claim] = {}  # the claim of each build in flight in this process

under_way = _builds.under_way  # True once this worker has begun to stop: claim no next file


@contextmanager
def building(claim: debounce.Claim) -> Iterator[None]:
    with _builds.in_flight(claim.doc_key):
        _claims[claim.doc_key] = claim
        try:
            yield
        finally:
            _claims.pop(claim.doc_key, None)


def give_back_unfinished(doc_keys: list[str], deadline_s: float) -> None:
    """Record the builds still running at the stop deadline as failed, and give their claims back."""
    error = f"the build did not finish within the {deadline_s:g} s stop deadline of a stopping worker"
    try:
        for doc_key in doc_keys:
            claim = _claims.get(doc_key)
            if claim is None:
                continue
            log.error("stopping: the build of %s did not finish within the %g s stop deadline: its claim "
                      "is given back", doc_key, deadline_s)
            build_alerts.failed(doc_key, debounce.release_failed(claim, 0, error), error)
    finally:
        connection.close()  # this timer thread's own connection


@worker_shutting_down.connect
def _stop_building(how=None, **kwargs) -> None:
    if how == "Warm":  # a cold shutdown (a second signal) ends the process at once anyway
        _builds.begin()


@worker_process_init.connect  # each prefork child, where builds run
@worker_ready.connect  # the worker itself (a solo or threads pool builds here)
def _watch_the_stop(**kwargs) -> None:
    deadline_s = omnium_setting("BUILD_STOP_DEADLINE_S")
    _builds.overrun_after(deadline_s, lambda unfinished: give_back_unfinished(unfinished, deadline_s))
