"""Celery tasks of the Games data: stat jobs. Lanes are chosen by the sender (queue=)."""

from celery import shared_task

from omnium.games import statjobs
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
