"""The worker-host namespaces the multi-host tests make (devtools.netns_hosts): a run that was
killed leaves its namespaces behind, with the same addresses the next run takes. The next run
removes them first (no process runs in them), and a live run's addresses are never taken twice:
a second veth with the same address would take the route and every connection would time out."""

import os
import shutil

import pytest

from devtools.netns_hosts import WorkerHost, leftovers, remove_abandoned

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                reason="network namespaces need root and `ip`")


def test_a_killed_runs_namespaces_are_removed_before_the_next_run_takes_their_addresses():
    killed = WorkerHost(1, "9901")
    killed.make_network()  # and then the run was killed: no process in it, nothing removed it

    remove_abandoned()

    assert killed.namespace not in leftovers()[0]
    assert killed.host_veth not in leftovers()[1]
    next_run = WorkerHost(1, "9902")
    try:
        next_run.make_network()
    finally:
        next_run.remove()


def test_an_address_in_use_is_refused_with_its_holder_named():
    live = WorkerHost(1, "9903")
    live.make_network()
    try:
        with pytest.raises(RuntimeError, match=f"{live.host_address} is already on {live.host_veth}"):
            WorkerHost(1, "9904").make_network()
    finally:
        live.remove()
    assert WorkerHost(1, "9904").namespace not in leftovers()[0]
