"""Import jobs: an upload recorded and queued, then run by a worker.

`create_import_job` records an upload (grading.ingest.imports.uploads) and queues
`run_import_job` (Celery) after the commit; the worker unpacks the archives, removes each
archive once unpacked, imports (grading.ingest.imports.runs), and removes the upload's
folder when the job ends, whatever its status: the groups are in the database, nothing
reads the files again.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from grading.ingest.importers.common import safe_text
from grading.ingest.importers.scan import Source
from grading.ingest.imports.runs import import_runs
from grading.ingest.imports.uploads import PACKED, UploadRefused, check_quota, unpack_upload, upload_folder, uploads_root
from grading.models import ImportJob, Project, Run
from grading.queueing import queue_on_commit
from grading.selectors.imports import disk_kept

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3  # deliveries of one job's task before it is failed instead of run again


MAX_ERROR = 4000  # characters of an error kept on a job


_PROGRESS_EVERY = 0.5  # seconds between progress writes of a job


def _safe(value):
    """A summary as any database stores it: lone surrogates and NUL made visible (see safe_text)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [_safe(v) for v in value]
    if isinstance(value, dict):
        return {_safe(k): _safe(v) for k, v in value.items()}
    return value


def _quota_left(project: Project, *, besides: ImportJob | None = None) -> int:
    return settings.GAGAR_IMPORT_QUOTA_BYTES - disk_kept(project, besides=besides)


def _shown(relative: str) -> str:
    """How findings name an upload's PATH: relative to the upload's folder (`files`, `run-2/run-2`), never absolute."""
    parts = Path(relative).parts
    return "/".join(parts[2:]) if len(parts) > 2 and parts[0] == uploads_root().name else relative


def create_import_job(
    *,
    project: Project,
    user,
    run: str,
    step: int,
    fmt: str,
    sources: list[dict],
    uploaded: list[dict],
    reward_threshold: float | None = None,
) -> ImportJob:
    """Record the job and queue it once the row is committed (the worker must be able to read it).

    The project's disk quota is checked again under a lock of the project's row, so two
    uploads that each fitted when they were stored cannot together pass it: the second is
    refused (UploadRefused) and its files removed.
    """
    size = sum(item.get("size") or 0 for item in uploaded)
    try:
        with transaction.atomic():
            Project.objects.select_for_update().filter(pk=project.pk).first()
            check_quota(project, size)
            run_obj, _ = Run.objects.get_or_create(project=project, name=run)
            job = ImportJob.objects.create(
                project=project,
                run=run_obj,
                step=step,
                format=fmt,
                sources=sources,
                uploaded_files=uploaded,
                created_by=user,
                reward_threshold=reward_threshold,
                disk_bytes=size,
            )
            queue_on_commit("grading.import_job", robust=False, job_id=job.pk)
    except UploadRefused:
        folder = upload_folder(sources)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return job


def _fail(job: ImportJob, error: str) -> None:
    """Mark the job failed with `error` (made storable), touching no other field (the summary may be what failed)."""
    job.status, job.error, job.finished_at = ImportJob.Status.FAILED, safe_text(error)[:MAX_ERROR], timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(status=job.status, error=job.error, finished_at=job.finished_at)


def _clean_up(job: ImportJob) -> None:
    """Remove the upload's folder (the archives as uploaded and all they unpacked), whatever the job's status."""
    folder = upload_folder(job.sources)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    job.disk_bytes = 0
    ImportJob.objects.filter(pk=job.pk).update(disk_bytes=0)


def run_import_job(*, job_id: int) -> ImportJob:
    """Run one queued job: status running -> done (with its summary) or failed (with the error).

    Whatever goes wrong ends as `failed` with the error kept, never `running`. Each delivery
    of the task counts an attempt first: a worker killed while importing (out of memory,
    time limit) leaves the job running and its message is delivered again, so past
    MAX_ATTEMPTS the job is failed instead of imported once more. A job already done or
    failed is not run again. Temporary files are removed on every path.
    """
    job = ImportJob.objects.select_related("project", "run").get(pk=job_id)
    if job.status in (ImportJob.Status.DONE, ImportJob.Status.FAILED):
        return job  # a redelivered message: the work is over (and importing again would change nothing)
    ImportJob.objects.filter(pk=job.pk).update(attempts=F("attempts") + 1)
    job.refresh_from_db(fields=["attempts"])
    if job.attempts > MAX_ATTEMPTS:
        logger.error("import job %s: attempt %s, past the limit of %s; failed", job.pk, job.attempts, MAX_ATTEMPTS)
        _fail(
            job,
            f"stopped after {MAX_ATTEMPTS} attempts: the worker was stopped each time while importing "
            "(out of memory or past the time limit?); the files are left out, upload smaller parts",
        )
        _clean_up(job)
        return job
    last_write = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last_write
        now = time.monotonic()
        if done == total or now - last_write >= _PROGRESS_EVERY:
            last_write = now
            ImportJob.objects.filter(pk=job.pk).update(progress_done=done, progress_total=total)

    try:
        job.status, job.started_at, job.error = ImportJob.Status.RUNNING, timezone.now(), ""
        job.save(update_fields=["status", "started_at", "error"])
        if any("archive" in s for s in job.sources):
            job.sources, job.disk_bytes = unpack_upload(job.sources, quota_left=_quota_left(job.project, besides=job))
            job.save(update_fields=["sources", "disk_bytes"])
            # Read once: from here a redelivered task imports what was unpacked (its sources name no archive).
            folder = upload_folder(job.sources)
            if folder is not None:
                shutil.rmtree(folder / PACKED, ignore_errors=True)
        media = Path(settings.MEDIA_ROOT)
        sources = [Source(media / s["path"], label=s.get("label", ""), shown=_shown(s["path"])) for s in job.sources]
        summary = import_runs(
            project=job.project,
            run=job.run.name,
            step=job.step,
            sources=sources,
            fmt=job.format,
            reward_threshold=job.reward_threshold,
            on_progress=progress,
        )
        job.refresh_from_db(fields=["progress_done", "progress_total"])
        job.summary = _safe(summary.as_dict())
        problem = summary.aborted or summary.nothing_imported()
        job.status = ImportJob.Status.DONE if problem is None else ImportJob.Status.FAILED
        job.error = safe_text(problem or "")[:MAX_ERROR]
        job.progress_done = job.progress_total = summary.instances
        job.finished_at = timezone.now()
        job.save(update_fields=["summary", "status", "error", "progress_done", "progress_total", "finished_at"])
    except UploadRefused as exc:
        _fail(job, str(exc))
    except Exception as exc:  # recorded on the job for the run page; the worker stays up
        logger.exception("import job %s failed", job.pk)
        _fail(job, f"{exc.__class__.__name__}: {exc}")
    finally:
        _clean_up(job)
    return job
