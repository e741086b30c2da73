"""Durable stat jobs: enqueued with the change that needs them, run on a lane's queue.

A job row is written in the workflow command's transaction, so a lost Celery message loses no
job: the sweeper re-sends waiting jobs. Running claims the row with a conditional UPDATE (a
second copy of the task finds nothing to claim); the stat's effect, its outbox row and the
job's completion commit together. After STAT_JOB_ATTEMPTS failures the job is failed and an
alert names the stat and the fixture.
"""

import logging
import time
from datetime import timedelta

from celery import current_app
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from omnium.alerts.service import open_alert, resolve_alert
from omnium.conf import omnium_setting
from omnium.database import claim_renewal
from omnium.games.models import ClockTimestamp, Games, StatJob
from omnium.games.outbox import record_change
from omnium.games.stats import STATS
from omnium.messaging import hints
from omnium.routing import RUN_STAT_JOB, stats_queue

log = logging.getLogger(__name__)



def enqueue(games: Games, stat: str, lane: str, *, fixture=None, event=None) -> StatJob:
    if stat not in STATS:
        raise ValueError(f"unknown stat {stat!r}; known: {sorted(STATS)}")
    job = StatJob.objects.create(games=games, stat=stat, lane=lane, fixture=fixture, event=event)
    transaction.on_commit(lambda: _send_soon(job.pk, lane))
    return job


def _send_soon(job_id: int, lane: str) -> None:
    """The job's hint from the hint thread: a save in a request never waits for the broker,
    nor fails when it is down."""
    hints.send_soon("a stat job", lambda: _send(job_id, lane))


def _send(job_id: int, lane: str, countdown: float = 0) -> None:
    """The job's hint; without it the stat-job sweeper runs the job (it is a row in PostgreSQL)."""
    current_app.send_task(RUN_STAT_JOB, args=[job_id], queue=stats_queue(lane), countdown=countdown)


def claim(job_id: int) -> StatJob | None:
    """Take the job if it is waiting (or its last runner died); None if someone else has it."""
    now = timezone.now()
    claimable = Q(state=StatJob.State.PENDING) | Q(state=StatJob.State.RUNNING, claimed_until__lt=now)
    taken = StatJob.objects.filter(claimable, pk=job_id, run_after__lte=now).update(
        state=StatJob.State.RUNNING, claimed_until=now + _ttl(), attempts=F("attempts") + 1
    )
    return StatJob.objects.select_related("games", "fixture").get(pk=job_id) if taken else None


def _ttl() -> timedelta:
    return timedelta(seconds=claim_renewal.ttl_s())


def _renew(job: StatJob) -> bool:
    """Extend the claim while the job runs (its attempt number is the claim's token)."""
    return bool(StatJob.objects.filter(pk=job.pk, state=StatJob.State.RUNNING, attempts=job.attempts)
                .update(claimed_until=timezone.now() + _ttl()))


def run(job_id: int) -> str:
    """Run one stat job; returns what happened: done, retry, failed or skipped."""
    claimed_at = time.monotonic()
    job = claim(job_id)
    if job is None:
        return "skipped"
    held = claim_renewal.hold(f"stat job {job_id}", lambda: _renew(job), claimed_at)
    try:
        return _run_claimed(job)
    finally:
        claim_renewal.let_go(held)


def _run_claimed(job: StatJob) -> str:
    try:
        with transaction.atomic():
            changed = STATS[job.stat](job.games, job)
            if changed:
                record_change(job.games, f"stat:{job.stat}", changed, job.lane)
            StatJob.objects.filter(pk=job.pk).update(
                state=StatJob.State.DONE, finished_at=ClockTimestamp(), claimed_until=None, last_error=""
            )
        resolve_alert("stat_job_failed", _alert_subject(job))  # if this job had failed before
        return "done"
    except Exception as exc:  # a stat's failure of any kind must be retried, then alerted
        log.exception("stat job %s (%s) failed on attempt %s", job.pk, job.stat, job.attempts)
        return _failed(job, exc)


def _failed(job: StatJob, exc: Exception) -> str:
    error = f"{type(exc).__name__}: {exc}"
    if job.attempts < omnium_setting("STAT_JOB_ATTEMPTS"):
        retry_at = timezone.now() + timedelta(seconds=omnium_setting("STAT_JOB_RETRY_S") * job.attempts)
        StatJob.objects.filter(pk=job.pk).update(
            state=StatJob.State.PENDING, run_after=retry_at, claimed_until=None, last_error=error
        )
        hints.send("a stat job retry",
                   lambda: _send(job.pk, job.lane, countdown=(retry_at - timezone.now()).total_seconds()))
        return "retry"
    StatJob.objects.filter(pk=job.pk).update(
        state=StatJob.State.FAILED, finished_at=ClockTimestamp(), claimed_until=None, last_error=error
    )
    fixture = job.fixture_id or "none"
    open_alert(
        "stat_job_failed",
        _alert_subject(job),
        f"Stat {job.stat!r} failed {job.attempts} times for fixture {fixture} "
        f"of {job.games.code}: {error}",
        job_id=job.pk, stat=job.stat, fixture=str(fixture), games=job.games.code,
    )
    return "failed"


def _alert_subject(job: StatJob) -> str:
    return f"{job.stat}:fixture={job.fixture_id or 'none'}"


def run_again(job_ids) -> int:
    """Give failed jobs a fresh set of attempts (once their cause is fixed); returns how many.
    Their alerts are resolved when they succeed."""
    with transaction.atomic():
        failed = StatJob.objects.select_for_update().filter(pk__in=job_ids, state=StatJob.State.FAILED)
        lanes = dict(failed.values_list("pk", "lane"))
        StatJob.objects.filter(pk__in=lanes).update(
            state=StatJob.State.PENDING, attempts=0, run_after=ClockTimestamp(), finished_at=None
        )
        for job_id, lane in lanes.items():
            transaction.on_commit(lambda job_id=job_id, lane=lane: _send_soon(job_id, lane))
    return len(lanes)


def due_jobs(limit: int = 200):
    """(id, lane) of jobs that should run now: waiting and due, or abandoned by a dead runner."""
    now = timezone.now()
    waiting = Q(state=StatJob.State.PENDING, run_after__lte=now) | Q(
        state=StatJob.State.RUNNING, claimed_until__lt=now
    )
    return list(StatJob.objects.filter(waiting).order_by("run_after").values_list("pk", "lane")[:limit])
