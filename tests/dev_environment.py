"""A pytest plugin loaded with `-p` (pytest.ini) so that it runs before pytest-django imports
the settings, which happens before any conftest.py is read.

Tests run with the development keys, which the settings refuse unless DEBUG is on (production
is the default). pytest-django still runs every test with settings.DEBUG = False; child
processes (tests/child_processes.py) inherit this environment.
"""

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile

from devtools.processes import free_port
from devtools.waiting import wait_until

PR_SET_PDEATHSIG = 1  # linux/prctl.h

os.environ.setdefault("DJANGO_DEBUG", "true")

# The pull cache destinations follow every Games and entitlement by themselves in production;
# in tests they would appear in every test that loads a Games (and send tasks that a later
# test's worker would run). Tests of that upkeep turn it on (tests/pullapi/test_pull_cache_upkeep.py).
os.environ.setdefault("OMNIUM_PULL_CACHE_AUTOMATIC", "false")

# The tests' servers are on loopback, which production refuses as a destination; the tests of
# the address policy set their own networks (tests/transports/test_address_policy.py).
os.environ.setdefault("OMNIUM_DESTINATION_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")


# --- Parallel runs (pytest-xdist, `make test`) ------------------------------------------------
# Each xdist worker ("gw0", "gw1", …) gets a test database and a broker vhost of its own from
# pytest-django and tests/conftest.py. Redis cannot be split as cleanly: tests empty whole
# databases (FLUSHDB) and publish on channels, which every database of a server shares. So each
# worker runs a redis-server of its own, started here, before the settings read REDIS_URL.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def _die_with_parent() -> None:
    """In the child: SIGTERM when the xdist worker that started it dies, however it dies."""
    ctypes.CDLL("libc.so.6").prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _own_redis_server() -> str:
    port, data_dir = free_port(), tempfile.mkdtemp(prefix=f"redis-{XDIST_WORKER}-")
    server = subprocess.Popen(
        [shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", data_dir],
        stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
    atexit.register(server.terminate)
    atexit.register(shutil.rmtree, data_dir, True)
    # devtools.private_redis.PrivateRedis would outlive a killed worker: this one dies with it.
    wait_until(lambda: socket.create_connection(("127.0.0.1", port), timeout=0.2).close() or True, 10, 0.02,
               f"the redis-server of xdist worker {XDIST_WORKER} listening on {port}", RuntimeError)
    return f"redis://127.0.0.1:{port}"


if XDIST_WORKER:
    database = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15").rsplit("/", 1)[1]
    os.environ["REDIS_URL"] = f"{_own_redis_server()}/{database}"
    os.environ.pop("OMNIUM_PULL_REDIS_URL", None)  # the pull cache follows REDIS_URL
