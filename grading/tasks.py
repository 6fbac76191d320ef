"""Celery tasks: thin, they take ids and call one service. Queue them with transaction.on_commit."""

from __future__ import annotations

from celery import shared_task

from grading.services.imports import run_import_job


@shared_task(name="grading.import_job")
def import_job_task(*, job_id: int) -> str:
    return run_import_job(job_id=job_id).status
