"""Probes a person asks for, run by a delivery worker and never in the request's thread.

A connection test of a saved destination and a fetch of an SFTP server's host key both connect
out and may wait for a host that never answers, for up to the destination's deadline. Run in
the admin's request they held a web worker that long (fifty silent destinations selected: about
fifty minutes) and answered at once whether any host and port is open (a port scanner). Here
each becomes a Probe row and a task on the delivery control queue; a delivery worker runs it in
one of its threads and records the outcome, which the page shows when it comes.

Capped, so no one can fill the workers with probes: at most PROBES_AT_ONCE waiting or running
in all, and PROBES_PER_PERSON_PER_MINUTE started by one person; what is over the cap is not
started, and the person is told why. A probe without an outcome past ABANDONED_AFTER_S lost
its worker and counts no more.
"""

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from celery import current_app
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from omnium.clients import audit
from omnium.clients.host_keys import offered_key
from omnium.clients.models import MAX_CONNECT_TIMEOUT_S, MAX_SEND_TIMEOUT_S, Destination
from omnium.conf import omnium_setting
from omnium.delivery.models import Probe
from omnium.delivery.operations import connection_check
from omnium.routing import RUN_PROBE
from omnium.safe_errors import safe_reason
from omnium.transports import TransportError

log = logging.getLogger(__name__)

ABANDONED_AFTER_S = MAX_CONNECT_TIMEOUT_S + MAX_SEND_TIMEOUT_S + 60
_CAP_LOCK = 7_461_002  # pg_advisory_xact_lock key: one person at a time counts and starts probes


@dataclass
class Started:
    probes: list[Probe] = field(default_factory=list)
    not_started: int = 0
    why_not: str = ""


def start_connection_tests(user, destinations: list[Destination]) -> Started:
    """A connection test for each destination, as many as the caps allow now."""
    return _start(user, [Probe(kind=Probe.Kind.CONNECTION_TEST, destination=d) for d in destinations])


def start_client_connection_test(destination: Destination) -> Started:
    """A connection test the destination's client asked for (through its portal, which keeps
    its own record of who asked): no staff person, so the per-person cap counts the client."""
    return _start(None, [Probe(kind=Probe.Kind.CONNECTION_TEST, destination=destination)],
                  same_asker=Q(requested_by__isnull=True, destination__client_id=destination.client_id))


def start_host_key_fetch(user, host: str, port: int, pinned: str = "") -> Started:
    return _start(user, [Probe(kind=Probe.Kind.HOST_KEY, host=host, port=port, pinned=pinned)])


def _start(user, wanted: list[Probe], same_asker: Q | None = None) -> Started:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CAP_LOCK])
        room, why_not = _room_for(same_asker if same_asker is not None else Q(requested_by=user))
        started = wanted[:room]
        for probe in started:
            probe.requested_by = user
        Probe.objects.bulk_create(started)
        if user is not None:
            audit.record(user, [probe.destination for probe in started if probe.destination], "Connection tested")
        for probe in started:
            transaction.on_commit(lambda probe=probe: _ask_a_worker(probe))
    not_started = len(wanted) - len(started)
    return Started(started, not_started, why_not if not_started else "")


def _ask_a_worker(probe: Probe) -> None:
    """Publish the probe's task, once, without Celery's publish retries: a person is waiting
    for the page, and a broker that is down is said so on it at once."""
    try:
        current_app.send_task(RUN_PROBE, args=[str(probe.pk)], retry=False)
    except Exception as exc:  # whatever the broker connection raised: the page says it plainly
        log.warning("could not ask a delivery worker to run probe %s", probe.pk, exc_info=True)
        outcome = {"ok": False, "error": "No delivery worker could be asked to run it: the broker is unreachable.",
                   "detail": safe_reason(f"{type(exc).__name__}: {exc}")}
        Probe.objects.filter(pk=probe.pk).update(outcome=outcome, finished_at=timezone.now())


def _room_for(same_asker: Q) -> tuple[int, str]:
    """How many probes the asker (the probes `same_asker` selects) may start now, and what limits it."""
    now = timezone.now()
    running = Probe.objects.filter(finished_at__isnull=True,
                                   requested_at__gt=now - timedelta(seconds=ABANDONED_AFTER_S)).count()
    started_by_user = Probe.objects.filter(same_asker, requested_at__gt=now - timedelta(minutes=1)).count()
    at_once, per_minute = omnium_setting("PROBES_AT_ONCE"), omnium_setting("PROBES_PER_PERSON_PER_MINUTE")
    in_all, yours = at_once - running, per_minute - started_by_user
    if yours <= in_all:
        return max(yours, 0), f"one person may start {per_minute} tests a minute; try the rest in a minute"
    return max(in_all, 0), f"at most {at_once} tests run at once; try the rest when these have finished"


def run(probe_id: str) -> None:
    """Run the probe (in a delivery worker's thread) and record what it found."""
    probe = Probe.objects.select_related("destination__client").filter(pk=probe_id, finished_at__isnull=True).first()
    if probe is None:
        return  # done already (its task came twice), or deleted with its destination
    outcome = _connection_test(probe.destination) if probe.kind == Probe.Kind.CONNECTION_TEST else _host_key(probe)
    Probe.objects.filter(pk=probe.pk).update(outcome=outcome, finished_at=timezone.now())


def _connection_test(destination: Destination) -> dict:
    result = connection_check.run(destination)
    return {"ok": result.ok, "plain": result.plain, "technical": result.technical,
            "steps": [{"name": step.name, "ok": step.error is None, "seconds": step.seconds}
                      for step in result.report.steps]}


def _host_key(probe: Probe) -> dict:
    try:
        return {"ok": True, **offered_key(probe.host, probe.port, probe.pinned)}
    except TransportError as failure:
        return {"ok": False, "error": failure.plain_sentence, "detail": safe_reason(str(failure))}


def is_abandoned(probe: Probe) -> bool:
    return probe.finished_at is None and timezone.now() - probe.requested_at > timedelta(seconds=ABANDONED_AFTER_S)
