"""The faults of bench/gameday.py, each injected into the running day and recorded with its
start and end (the moment recovery is measured from).

Our own components: `kill -9` of a build worker mid-build, of the delivery worker mid-send
and of the stat worker mid-job (the supervisor restarts each), a restart of the Redis of
REDIS_URL (empty afterwards), a PostgreSQL restart, credentials rotated to a new key.
Destinations: a webhook answering 403 for a while, an SFTP server frozen (SIGSTOP).
"""

import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from cryptography.fernet import Fernet
from django.conf import settings
from django.db import connection
from django.utils import timezone

from devtools.loopback import servers
from devtools.waiting import wait_until
from omnium.delivery.models import DeliveryAttempt, SenderState
from omnium.feeds.models import PendingBuild
from omnium.games.models import StatJob

OWN, DESTINATION = "own", "destination"
MID_WORK_WAIT_S = 60  # how long a kill waits for its worker to be busy before killing it anyway
POSTGRES_CLUSTER = ("15", "main")


@dataclass
class Fault:
    name: str
    kind: str  # OWN or DESTINATION
    started_at: datetime
    ended_at: datetime | None = None
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "started_at": self.started_at.isoformat(),
                "ended_at": self.ended_at and self.ended_at.isoformat(), **self.details}


def _busy(query) -> bool:
    try:
        return query()
    except Exception:  # noqa: BLE001 - a failed look is "not yet"
        connection.close()
        return False


def kill_when_busy(supervisor, name: str, busy, what: str) -> Fault:
    """SIGKILL process `name` as soon as `busy()` says it holds work (or after MID_WORK_WAIT_S)."""
    try:
        caught = bool(wait_until(lambda: _busy(busy), MID_WORK_WAIT_S, 0.02, what, TimeoutError))
    except TimeoutError:
        caught = False
    process = supervisor.process(name)
    fault = Fault(f"kill -9 {name}", OWN, timezone.now())
    process.kill()
    fault.ended_at = timezone.now()  # the fault is the kill; the supervisor's restart is recovery
    wait_until(lambda: supervisor.process(name) is not process and supervisor.process(name).running(), 120, 0.1,
               f"{name} restarted", TimeoutError)
    fault.details = {"caught_" + what: caught,
                     "restarted_after_s": round((timezone.now() - fault.ended_at).total_seconds(), 2)}
    return fault


def kill_build_worker(supervisor, name: str) -> Fault:
    return kill_when_busy(supervisor, name, PendingBuild.objects.filter(claim_token__isnull=False).exists,
                          "mid_build")


def kill_delivery_worker(supervisor, name: str, destination_ids) -> Fault:
    recent = lambda: DeliveryAttempt.objects.filter(  # noqa: E731 - a query re-run by the poll
        ok__isnull=True, destination_id__in=destination_ids,
        started_at__gte=timezone.now() - timedelta(seconds=5)).exists()
    return kill_when_busy(supervisor, name, recent, "mid_send")


def kill_stat_worker(supervisor, name: str) -> Fault:
    return kill_when_busy(supervisor, name, StatJob.objects.filter(state=StatJob.State.RUNNING).exists, "mid_job")


def restart_redis(redis) -> Fault:
    fault = Fault("redis restart (keys lost)", OWN, timezone.now())
    redis.restart()
    fault.ended_at = timezone.now()
    return fault


def restart_postgres() -> Fault:
    version, cluster = POSTGRES_CLUSTER
    fault = Fault("postgresql restart", OWN, timezone.now())
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, cluster, "restart"], check=True)
    fault.ended_at = timezone.now()
    connection.close()  # this thread's connection died with the server
    return fault


def rotate_credentials(supervisor, env: dict, workers: list[str]) -> Fault:
    """A new key first in the ring, every worker restarted with it (one at a time, as a rolling
    deploy would), then every destination's credentials re-encrypted with it."""
    fault = Fault("credential rotation", OWN, timezone.now())
    old_ring = env.get("OMNIUM_CREDENTIAL_KEYS") or ",".join(settings.OMNIUM_CREDENTIAL_KEYS)
    env["OMNIUM_CREDENTIAL_KEYS"] = f"{Fernet.generate_key().decode()},{old_ring}"
    for name in workers:
        supervisor.restart(name)
    subprocess.run([sys.executable, "manage.py", "rotate_credentials"], env=env, check=True,
                   cwd=settings.BASE_DIR, stdout=subprocess.DEVNULL)
    fault.ended_at = timezone.now()
    return fault


def kill_broker_node(cluster, vhost_url: str, back_after_s: float) -> Fault:
    """kill -9 the RabbitMQ node where most queues live; it is started again (and rejoins)
    `back_after_s` later, as an operator would. Recovery counts from the kill: the other two
    nodes carry the day meanwhile."""
    node = cluster.node_with_most_queues(vhost_url)
    fault = Fault(f"kill -9 broker node {node.name}", OWN, timezone.now())
    node.kill()
    fault.ended_at = fault.started_at
    threading.Timer(back_after_s, cluster.restart, args=(node,)).start()
    return fault


def stop_the_whole_broker(cluster, seconds: float) -> Fault:
    """kill -9 every RabbitMQ node, and start them all again `seconds` later; the fault ends
    when the first node answers again (the broker is back for its clients)."""
    fault = Fault(f"whole broker down for {seconds:g} s", OWN, timezone.now())
    cluster.kill_all()
    time.sleep(seconds)
    fault.ended_at = datetime.fromtimestamp(cluster.start_after_outage(), tz=UTC)
    return fault


def refuse_webhook(receiver, destination_id: int, seconds: float, status: int = 403) -> Fault:
    """The receiver answers `status` for `seconds` (a client mid-deploy); the fault's end is
    known now, the pace in force then is read afterwards (`retry_pace`)."""
    fault = Fault(f"webhook answers {status} for {seconds:g} s", DESTINATION, timezone.now())
    receiver.refuse(status, seconds)
    fault.ended_at = fault.started_at + timedelta(seconds=seconds)
    fault.details["destination_id"] = destination_id
    _note_pace_at(fault, fault.ended_at)
    return fault


def freeze_sftp_server(sshd, destination_id: int, seconds: float) -> Fault:
    """SIGSTOP the server and its sessions for `seconds`, in the background."""
    fault = Fault(f"sftp server frozen for {seconds:g} s", DESTINATION, timezone.now())
    fault.details["destination_id"] = destination_id
    frozen = [sshd.process.pid, *sshd.session_pids()]
    servers.freeze(frozen)

    def thaw():
        _note_pace(fault)  # just before the thaw: the pace in force at the fault's end
        servers.thaw(frozen)
        fault.ended_at = timezone.now()

    threading.Timer(seconds, thaw).start()
    return fault


def _note_pace_at(fault: Fault, when: datetime) -> None:
    threading.Timer(max(0.0, (when - timezone.now()).total_seconds() - 0.2), _note_pace, [fault]).start()


def _note_pace(fault: Fault) -> None:
    """The destination's back-off at the fault's end: failures in a row and when it retries."""
    try:
        sender = SenderState.objects.get(destination_id=fault.details["destination_id"])
        fault.details["failures_in_a_row_at_end"] = sender.consecutive_failures
        fault.details["next_retry_in_s_at_end"] = (
            None if sender.retry_at is None else round((sender.retry_at - timezone.now()).total_seconds(), 1))
    except Exception as exc:  # noqa: BLE001 - a measurement that failed says so
        fault.details["pace_unknown"] = str(exc)[:200]
    finally:
        connection.close()  # a timer thread's connection would otherwise be left open


def wait_for(seconds_from_start: float, started: float) -> None:
    time.sleep(max(0.0, seconds_from_start - (time.monotonic() - started)))
