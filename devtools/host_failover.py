"""Cutting a worker host off mid-send, measured: the scenario of
tests/delivery/test_worker_hosts.py and bench/hosts.py, run against the hosts of
`netns_hosts` and a receiver that counts the sends in flight per path.

While results keep changing, wait until every host confirms sends, wait for a send of the
host to cut to be under way, cut it (its veth down), and time until the surviving host has
confirmed a send to every destination the cut host served last (`host_failover_s`); then stop
the changes and wait until every destination has the newest version of every file.
"""

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection

from devtools.netns_hosts import WorkerHost
from devtools.waiting import wait_until
from omnium.delivery.models import DeliveryAttempt, DeliveryState
from omnium.feeds.models import FeedDocument
from omnium.games import workflow
from omnium.games.models import Fixture


@dataclass
class FailoverRun:
    host_failover_s: float
    orphaned_destinations: int  # those the cut host served last
    cut_mid_send: bool  # the cut host had a send without an outcome to one of them
    confirmed_before_cut: dict[str, int]  # host name -> sends confirmed
    caught_up_s: float  # from the last change until every destination had every newest version


def record_score(games, value: int, nth: int = 0) -> None:
    fixture = Fixture.objects.filter(games=games).order_by("starts_at", "id")[nth]
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: value})


class ChangingResults:
    """A score every `every_s` on four fixtures, in a thread, until the `with` ends: new
    versions keep coming, so a host is cut while it works."""

    def __init__(self, games, every_s: float = 0.25):
        self.games, self.every_s, self.stopped = games, every_s, threading.Event()
        self.thread = threading.Thread(target=self._run, name="changing-results")

    def _run(self):
        value = 0
        try:
            while not self.stopped.wait(self.every_s):
                value += 1
                record_score(self.games, value, nth=value % 4)
        finally:
            connection.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(10)


def sent_by(host: WorkerHost, **filters):
    return DeliveryAttempt.objects.filter(worker__startswith=f"{host.delivery_worker}@", **filters)


def last_sender(destination_id: int, hosts: list[WorkerHost]) -> WorkerHost | None:
    attempt = DeliveryAttempt.objects.filter(destination_id=destination_id).order_by("-started_at").first()
    return next((h for h in hosts if attempt and attempt.worker.startswith(f"{h.delivery_worker}@")), None)


def confirmed_after(host: WorkerHost, destination_id: int, moment: datetime) -> datetime | None:
    """When `host` first confirmed a send to the destination that it started after `moment`."""
    attempt = sent_by(host, destination_id=destination_id, ok=True, started_at__gt=moment).order_by("started_at").first()
    return attempt and attempt.started_at + timedelta(milliseconds=attempt.duration_ms)


def everything_delivered(destination_ids) -> bool:
    current = dict(FeedDocument.objects.values_list("doc_key", "seq"))
    return all(state.sent_seq == current[state.doc_key]
               for state in DeliveryState.objects.filter(destination_id__in=destination_ids))


def cut_one_host_mid_send(games, hosts: list[WorkerHost], destination_ids, takeover_timeout_s: float = 30) -> FailoverRun:
    cut_host, surviving_host = hosts[0], hosts[1]
    with ChangingResults(games):
        wait_until(lambda: all(sent_by(h, ok=True).exists() for h in hosts), 30, message="every host confirming sends")
        wait_until(lambda: sent_by(cut_host, ok=None).exists(), 10, message="a send of the host to cut under way")
        confirmed = {h.name: sent_by(h, ok=True).count() for h in hosts}
        cut_at = datetime.now(UTC)
        cut_host.cut()
        orphans = {d for d in destination_ids if last_sender(d, hosts) is cut_host}
        wait_until(lambda: all(confirmed_after(surviving_host, d, cut_at) for d in orphans), takeover_timeout_s,
                   message="the cut host's destinations taken over")
        time.sleep(2)  # the surviving host alone, under changes
    changes_stopped = time.monotonic()
    wait_until(lambda: everything_delivered(destination_ids), 30, message="every destination at its newest version")
    return FailoverRun(
        host_failover_s=max((confirmed_after(surviving_host, d, cut_at) - cut_at).total_seconds() for d in orphans),
        orphaned_destinations=len(orphans),
        cut_mid_send=sent_by(cut_host, ok=None, destination_id__in=orphans).exists(),
        confirmed_before_cut=confirmed,
        caught_up_s=time.monotonic() - changes_stopped,
    )
