"""Celery tasks of ingest: thin, they take ids and call one service (imported in the body)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="grading.import_job")
def import_job_task(*, job_id: int) -> str:
    from grading.ingest.imports.jobs import run_import_job

    return run_import_job(job_id=job_id).status


@shared_task(name="grading.remove_orphan_uploads")
def remove_orphan_uploads_task() -> int:
    """Celery beat, hourly (gagar_web/celery.py): upload folders a day old that no queued or running job owns."""
    from grading.ingest.imports.orphans import remove_orphan_uploads

    return len(remove_orphan_uploads())
