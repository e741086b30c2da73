"""The processes tests, benchmarks and the demo start: none is left running by a failed start."""

import sys

import pytest

from devtools.processes import ManagedProcess


@pytest.mark.servers
def test_a_process_that_never_gets_ready_is_stopped_before_the_error(tmp_path):
    process = ManagedProcess([sys.executable, "-c", "import time; time.sleep(60)"], "never-ready", log_dir=tmp_path)

    with pytest.raises(TimeoutError, match="printing 'listening'"):
        process.wait_for_output("listening", timeout=1)

    assert not process.running()
