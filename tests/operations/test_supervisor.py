"""The supervisor of the demo and the benchmarks restarts a worker that dies, as systemd does
in production (deploy/systemd/)."""

import pytest

from devtools.supervisor import Supervisor
from devtools.waiting import wait_until
from omnium.routing import LIVE_QUEUES
from tests import child_processes

pytestmark = pytest.mark.worker


@pytest.fixture
def supervisor(transactional_db):
    said = []
    supervisor = Supervisor(report=said.append)
    supervisor.said = said
    yield supervisor
    supervisor.stop()


def test_a_killed_worker_is_restarted_and_said_so(supervisor):
    first = supervisor.add("live", lambda: child_processes.start_worker(LIVE_QUEUES, "supervised-live", 1))

    first.kill()  # SIGKILL to its whole process group, as a crash (or the OOM killer) would

    restarted = wait_until(lambda: supervisor.restarts == 1 and supervisor.process("live"), timeout=60,
                           message="the killed worker restarted")
    assert restarted.pid != first.pid and restarted.running()
    assert " ready." in restarted.output_since_start()
    assert supervisor.said == ["live exited (code -9); restarted"]


def test_a_deliberate_restart_is_not_counted_as_a_crash(supervisor):
    first = supervisor.add("live", lambda: child_processes.start_worker(LIVE_QUEUES, "supervised-live", 1))

    second = supervisor.restart("live")

    assert second.pid != first.pid and second.running() and not first.running()
    assert supervisor.restarts == 0 and supervisor.said == []
