"""Celery tasks: thin, they take ids and call one service. Queue them with transaction.on_commit."""

from __future__ import annotations

from celery import shared_task

from grading.services.imports import run_import_job


@shared_task(name="grading.import_job")
def import_job_task(*, job_id: int) -> str:
    return run_import_job(job_id=job_id).status


@shared_task(name="grading.grade_group", acks_late=True, reject_on_worker_lost=True, max_retries=0)
def grade_group_task(*, group_id: int, backend: str) -> str:
    """Grade one mixed group. No task-level retries: the backend retries its API calls;
    a soft time limit (below the broker's visibility timeout) stores a timeout verdict."""
    from celery.exceptions import SoftTimeLimitExceeded

    from grading.services.grading import grade_group, record_timeout

    try:
        return grade_group(group_id=group_id, backend=backend).status
    except SoftTimeLimitExceeded:
        return record_timeout(group_id=group_id, backend=backend, why="grading exceeded the task's time limit").status
