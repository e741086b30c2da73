"""Two worker hosts for real (network namespaces, devtools.netns_hosts) share the delivery
work, and when one is cut off mid-send the other takes its destinations over, one sender per
destination at a time, losing nothing (the scenario: devtools.host_failover)."""

import os
import shutil

import pytest

from devtools.host_failover import cut_one_host_mid_send
from devtools.loopback.hosts import HoldingReceiver
from devtools.netns_hosts import WorkerHosts
from tests import child_processes
from tests.delivery.fixtures import webhook_settings

pytestmark = [
    pytest.mark.worker, pytest.mark.servers,
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="network namespaces need root and `ip`"),
]
# Short claims and fast sweeps, as in the other worker tests; the hosts' processes and beat share them.
ENV = {"OMNIUM_SWEEP_INTERVAL_S": 0.5, "OMNIUM_DELIVERY_LEASE_MARGIN_S": 5}


@pytest.fixture
def receiver():
    server = HoldingReceiver(hold_s=0.2)
    yield server
    server.stop()


@pytest.fixture
def two_hosts(transactional_db, clean_redis, receiver):
    """Beat on this machine; two namespaces, each with a build and a delivery worker (8 threads:
    the machine's PostgreSQL is shared with other test runs)."""
    beat = child_processes.start_beat("hosts-beat", **ENV)
    try:
        with WorkerHosts(2, child_processes.child_environment(**ENV), child_processes.LOG_DIR,
                         forward_ports=[receiver.port], delivery_threads=8) as hosts:
            yield hosts.hosts
    finally:
        beat.stop()


def test_a_host_cut_off_mid_send_hands_its_destinations_over(small_games, subscribe, receiver, two_hosts):
    ids = [subscribe(small_games, webhook_settings(receiver.url(f"d{n}")), feed_types=("calendar", "results")).pk
           for n in range(8)]

    run = cut_one_host_mid_send(small_games, two_hosts, ids)  # ends when every destination has every newest version

    print(run)
    assert all(run.confirmed_before_cut.values()), "both hosts confirmed sends"
    assert run.orphaned_destinations and run.cut_mid_send
    assert run.host_failover_s < 20
    assert max(receiver.max_in_flight.values()) == 1, receiver.max_in_flight
