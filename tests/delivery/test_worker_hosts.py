"""Two worker hosts for real (network namespaces, devtools.netns_hosts) share the delivery
work, and when one is cut off mid-send the other takes its destinations over, one sender per
destination at a time, losing nothing."""

import os
import shutil
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from devtools.netns_hosts import WorkerHosts
from devtools.waiting import wait_until
from omnium.delivery.models import DeliveryAttempt, DeliveryState
from omnium.feeds.models import FeedDocument
from tests import child_processes
from tests.delivery.fixtures import webhook_settings
from tests.delivery.test_delivery_workers import SlowReceiver, score

pytestmark = [
    pytest.mark.worker, pytest.mark.servers,
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="network namespaces need root and `ip`"),
]
FEEDS = ("calendar", "results")
# Short claims and fast sweeps, as in the other worker tests; the hosts' processes and beat share them.
ENV = {"OMNIUM_SWEEP_INTERVAL_S": 0.5, "OMNIUM_DELIVERY_LEASE_MARGIN_S": 5}


@pytest.fixture
def receiver_holding_each_send():
    server = SlowReceiver(hold_s=0.2)
    yield server
    server.stop()


@pytest.fixture
def two_hosts(transactional_db, clean_redis, receiver_holding_each_send):
    """Beat on this machine; two namespaces, each with a build and a delivery worker (8 threads:
    the machine's PostgreSQL is shared with other test runs)."""
    beat = child_processes.start_beat("hosts-beat", **ENV)
    try:
        port = receiver_holding_each_send.http.server_address[1]
        with WorkerHosts(2, child_processes.child_environment(**ENV), child_processes.LOG_DIR,
                         forward_ports=[port], delivery_threads=8) as hosts:
            yield hosts.hosts
    finally:
        beat.stop()


class ChangingResults:
    """Scores recorded every 0.25 s on four fixtures, in a thread, until stopped: new versions
    of the subscribed files keep coming, so a host is always cut mid-work."""

    def __init__(self, games):
        self.games, self.stopped = games, threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self):
        value = 0
        while not self.stopped.wait(0.25):
            value += 1
            score(self.games, value, nth=value % 4)
        connection.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(10)


def sent_by(host, **filters):
    return DeliveryAttempt.objects.filter(worker__startswith=f"{host.delivery_worker}@", **filters)


def last_sender_host(destination_id, hosts):
    attempt = DeliveryAttempt.objects.filter(destination_id=destination_id).order_by("-started_at").first()
    return next((h for h in hosts if attempt and attempt.worker.startswith(f"{h.delivery_worker}@")), None)


def confirmed_after(host, destination_id, moment) -> datetime | None:
    """When `host` first confirmed a send to the destination that it started after `moment`."""
    attempt = sent_by(host, destination_id=destination_id, ok=True, started_at__gt=moment).order_by("started_at").first()
    return attempt and attempt.started_at + timedelta(milliseconds=attempt.duration_ms)


def everything_delivered(ids) -> bool:
    current = dict(FeedDocument.objects.values_list("doc_key", "seq"))
    return all(state.sent_seq == current[state.doc_key]
               for state in DeliveryState.objects.filter(destination_id__in=ids))


def test_a_host_cut_off_mid_send_hands_its_destinations_over(small_games, subscribe, receiver_holding_each_send,
                                                             two_hosts):
    receiver, (cut_host, surviving_host) = receiver_holding_each_send, two_hosts
    ids = [subscribe(small_games, webhook_settings(receiver.url(f"d{n}")), feed_types=FEEDS).pk for n in range(8)]
    with ChangingResults(small_games):
        wait_until(lambda: all(sent_by(host, ok=True).exists() for host in two_hosts), 30,
                   message="both hosts confirming sends")
        wait_until(lambda: sent_by(cut_host, ok=None).exists(), 10, message="a send of the host to cut under way")
        cut_at = datetime.now(UTC)
        cut_host.cut()
        orphans = {d for d in ids if last_sender_host(d, two_hosts) is cut_host}

        wait_until(lambda: all(confirmed_after(surviving_host, d, cut_at) for d in orphans), 30,
                   message="the cut host's destinations taken over")
        host_failover_s = max((confirmed_after(surviving_host, d, cut_at) - cut_at).total_seconds() for d in orphans)
        time.sleep(2)  # the surviving host sends on under changes
    wait_until(lambda: everything_delivered(ids), 30, message="every destination at its newest version")

    print(f"host_failover_s={host_failover_s:.2f} for {len(orphans)} destinations")
    assert orphans, "the cut host was the last sender of no destination"
    assert sent_by(cut_host, ok=None, destination_id__in=orphans).exists(), "cut mid-send"
    assert host_failover_s < 20
    assert max(receiver.max_in_flight.values()) == 1, receiver.max_in_flight
