"""Celery tasks of the Games data: stat jobs. Lanes are chosen by the sender (queue=)."""

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from omnium.conf import omnium_setting
from omnium.games import statjobs
from omnium.games.models import StatJob
from omnium.routing import stats_queue


@shared_task
def run_stat_job(job_id: int) -> str:
    return statjobs.run(job_id)


@shared_task
def sweep_stat_jobs() -> int:
    """The backstop: re-send every stat job that is due, on its own lane's queue."""
    due = statjobs.due_jobs()
    for job_id, lane in due:
        run_stat_job.apply_async(args=[job_id], queue=stats_queue(lane))
    return len(due)


@shared_task
def prune_finished_stat_jobs() -> int:
    """Delete stat jobs done more than STAT_JOB_RETENTION_DAYS ago. A failed job is kept: it
    waits for a person to run it again (its alert names it)."""
    cutoff = timezone.now() - timedelta(days=omnium_setting("STAT_JOB_RETENTION_DAYS"))
    deleted, _ = StatJob.objects.filter(state=StatJob.State.DONE, finished_at__lt=cutoff).delete()
    return deleted
