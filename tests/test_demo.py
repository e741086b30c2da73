"""`make demo`, the main job, run as the README runs it and cut short (DEMO_SECONDS): it loads
the Games, replays changes through real workers, delivers with proof to every healthy demo
destination while the hanging one slows nobody, and leaves nothing running.

Nothing else ran it: a name moved to another module stopped it at its imports for a day of
commits while every test passed.
"""

import json
import os
import re
import socket
import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from devtools.private_redis import PrivateRedis
from devtools.processes import ROOT
from tests import child_processes

# Fixed ports (8000, 5555) and a replay of its own: run by itself.
pytestmark = [pytest.mark.worker, pytest.mark.servers, pytest.mark.alone]

DEMO_DATABASE = "omnium_demo_check"  # a name the demo's guard accepts (devtools/demo_guard.py)
HANGING = "DailyHunt over SFTP (host hangs)"
DEMO_PORTS = (8000, 5555)  # the API/admin server and Flower


def demo_environment(redis_url: str) -> dict:
    database = urlsplit(child_processes.database_url())._replace(path=f"/{DEMO_DATABASE}").geturl()
    env = {key: value for key, value in os.environ.items()
           if key not in ("CELERY_BROKER_URL", "CELERY_BROKER_MANAGEMENT_URL", "OMNIUM_PULL_REDIS_URL")}
    return {**env, "DJANGO_DEBUG": "true", "DATABASE_URL": database, "REDIS_URL": redis_url,
            "DEMO_SECONDS": "75", "DEMO_REPLAY_SECONDS": "20"}


def json_after(heading: str, output: str):
    """The JSON the demo prints after the line that ends with `heading`."""
    found = re.search(rf"{re.escape(heading)}\n(.*?)\n\[demo ", output, re.DOTALL)
    assert found, f"no {heading!r} in the demo's output:\n{output[-3000:]}"
    return json.loads(found.group(1))


def answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def test_make_demo_delivers_with_proof_to_every_healthy_destination_and_leaves_nothing_running():
    assert not any(answers(port) for port in DEMO_PORTS), "something already listens on the demo's ports"
    redis = PrivateRedis("demo-check-redis", child_processes.LOG_DIR)  # the demo empties its Redis database
    try:
        env = demo_environment(redis.url)
        for step in (["scripts/ensure_database.py"], ["manage.py", "migrate", "--noinput"]):
            subprocess.run([sys.executable, *step], cwd=ROOT, env=env, check=True, capture_output=True, timeout=300)
        finished = subprocess.run([sys.executable, "scripts/demo.py"], cwd=ROOT, env=env, capture_output=True,
                                  text=True, timeout=600)
    finally:
        redis.stop()
    output = finished.stdout + finished.stderr
    assert finished.returncode == 0, output[-3000:]

    built = json_after("what was built:", output)
    assert built["changes_committed"] > 0 and built["builds"]["new_version"] > 0, built
    landed = {row["destination"]: row for row in json_after(
        "what landed where (proof of delivery; the hanging destination slows nobody else):", output)}
    assert len(landed) == 5
    for name, row in landed.items():
        if name == HANGING:
            assert row["sends"] == 0 and row["last_proof"] is None and row["status"] != "running", row
            continue
        assert row["status"] == "running" and row["sends"] > 0 and row["files_current"] > 0, row
        proof = row["last_proof"]
        assert proof["bytes"] > 0 and proof["version"] > 0 and len(proof["sha256"]) == 17 and proof["receipt"], row
    assert "processes restarted after exiting: 0" in output
    assert finished.stdout.rstrip().endswith("everything the demo started has stopped")
    assert not any(answers(port) for port in DEMO_PORTS), "the demo left a server running"
