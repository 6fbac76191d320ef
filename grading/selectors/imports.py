"""Import jobs: one, a page of a project's, a run's newest, and the disk they keep against the quota."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Sum

from grading.models import ImportJob, Project, Run


def import_job(pk: int) -> ImportJob | None:
    """The import job of that id with its project and run (None when there is none)."""
    return ImportJob.objects.select_related("project", "run").filter(pk=pk).first()


def import_jobs_page(project: Project, *, before: int | None, limit: int) -> list[ImportJob]:
    """Up to `limit` of the project's import jobs, newest first, with ids below `before` when
    given. Keyset paging on the id: one query per page however many jobs the project has run."""
    jobs = ImportJob.objects.filter(project=project)
    if before is not None:
        jobs = jobs.filter(pk__lt=before)
    return list(jobs.select_related("project", "run").order_by("-id")[:limit])


RECENT_IMPORT_JOBS = 10


def disk_kept(project: Project, *, besides: ImportJob | None = None) -> int:
    """Bytes the project's import jobs keep on disk now (all of them, or all but `besides`); one query."""
    jobs = ImportJob.objects.filter(project=project, disk_bytes__gt=0)
    if besides is not None:
        jobs = jobs.exclude(pk=besides.pk)
    return jobs.aggregate(total=Sum("disk_bytes"))["total"] or 0


def import_disk(project: Project) -> dict:
    """What the import page says is kept on disk for the project, against its quota."""
    return {"disk_kept": disk_kept(project), "disk_quota": settings.GAGAR_IMPORT_QUOTA_BYTES}


def import_jobs(run: Run) -> dict:
    """The run's newest import jobs and whether one is still queued or running (the run page and
    the import page list them; htmx polls while one is active)."""
    jobs = list(ImportJob.objects.filter(run=run).select_related("created_by")[:RECENT_IMPORT_JOBS])
    return {"import_jobs": jobs, "imports_active": any(job.is_active for job in jobs)}
