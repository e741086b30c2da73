"""The pull API behind HAProxy as deploy/haproxy/omnium-api.cfg sets it up (issue 32): a server
that stops answering, or dies, leaves the rotation on its /readyz checks, and the pulls that
met it are retried on the other, so clients see no error."""

import os
import signal
import time

import pytest
import requests

from devtools.processes import ROOT, ManagedProcess, free_port
from devtools.waiting import wait_until
from tests.child_processes import LOG_DIR
from tests.pullapi.servers import ApiServer

pytestmark = pytest.mark.servers

CONFIG = ROOT / "deploy" / "haproxy" / "omnium-api.cfg"


@pytest.fixture
def balanced(games):
    """Two API servers behind HAProxy: (the balancer's URL, the two servers). Both are new to
    the balancer, as after a deploy: each must become ready by its /readyz alone."""
    servers, haproxy = [], None
    try:
        servers = [ApiServer(f"pull-api-balanced-{n}") for n in (1, 2)]
        port = free_port()
        environment = {**os.environ, "OMNIUM_LB_BIND": f"127.0.0.1:{port}", "OMNIUM_API_HOST": "localhost",
                       "OMNIUM_API_1": f"127.0.0.1:{servers[0].port}", "OMNIUM_API_2": f"127.0.0.1:{servers[1].port}"}
        haproxy = ManagedProcess(["haproxy", "-db", "-f", str(CONFIG)], "haproxy", environment, LOG_DIR)
        haproxy.wait_for_port(port)
        yield f"http://127.0.0.1:{port}", servers
    finally:
        if haproxy is not None:
            haproxy.stop()
        for server in servers:
            if server.process.running():
                os.killpg(server.process.popen.pid, signal.SIGCONT)
            server.stop()


def _pull_for(url: str, headers: dict, seconds: float) -> list[tuple[float, int, float]]:
    """(time since start, status, seconds taken) of each pull, one after another, under the
    client's rate limit (OMNIUM_PULL_CLIENT_RATE)."""
    outcomes, started = [], time.monotonic()
    while time.monotonic() - started < seconds:
        sent = time.monotonic()
        status = requests.get(url, headers=headers, timeout=10).status_code
        outcomes.append((sent - started, status, time.monotonic() - sent))
        time.sleep(0.01)
    return outcomes


@pytest.mark.parametrize("failure", [signal.SIGSTOP, signal.SIGKILL], ids=["stuck", "killed"])
def test_a_server_that_stops_answering_leaves_the_rotation_and_no_pull_fails(games, entitle, balanced, failure):
    balancer, servers = balanced
    _, key = entitle("acme", games, "medals")
    url, headers = f"{balancer}/v1/feeds/{games.code}/medals", {"Authorization": f"Bearer {key}"}
    # Both new servers turn ready on their checks alone (each /readyz loads its catalogue).
    for server in servers:
        wait_until(lambda s=server: requests.get(f"{s.url}/readyz", timeout=5).ok, 15, message="ready")
    time.sleep(2.5)  # two passing checks a second apart: both in rotation
    assert {requests.get(url, headers=headers, timeout=5).status_code for _ in range(4)} == {200}

    os.killpg(servers[0].process.popen.pid, failure)
    outcomes = _pull_for(url, headers, 8.0)

    assert {status for _, status, _ in outcomes} == {200}, "every pull answered"
    # Checked every second, out after two failures (each up to 1 s): from then on no pull waits
    # for the failed server.
    late = [took for at, _, took in outcomes if at > 4.0]
    assert late and max(late) < 0.5, f"slowest pull once out of rotation: {max(late):.2f} s"
