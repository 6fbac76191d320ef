"""Celery tasks of the grader: thin, they take ids and call one service (imported in the body,
so the service can import this module at its top and queue through transaction.on_commit)."""

from __future__ import annotations

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded


@shared_task(name="grading.grade_group", bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def grade_group_task(self, *, group_id: int, backend: str) -> str:
    """Grade one mixed group of the run of `group_id`: the best one it still has queued, which
    this task claims (grading.jobs.scheduling), not necessarily the one named; "nothing"
    when no job is left to claim. The model call is not retried here (the backend retries its
    API calls); a database or broker error before or after it retries the task with backoff,
    a bounded number of times, then fails the job (grading.jobs.recovery); a retry or a
    redelivery keeps the task's id, so it goes on with the job it claimed. A soft time limit
    (below the broker's visibility timeout) stores a timeout verdict."""
    from django.conf import settings

    from grading.jobs.grade import grade_group, record_timeout
    from grading.jobs.recovery import INFRASTRUCTURE_ERRORS, describe, give_up, note_retry, retry_delay
    from grading.jobs.scheduling import claim
    from grading.jobs.worker import soft_limit_of, soft_time_limit

    task_id, named = self.request.id or "", group_id
    try:
        with soft_time_limit(soft_limit_of(self)):  # the gevent pool has no soft limit of its own
            claimed = claim(group_id=group_id, backend=backend, task_id=task_id)
            if claimed is None:
                return "nothing"
            group_id = claimed  # from here on, the job this task holds
            return grade_group(group_id=group_id, backend=backend).status
    except SoftTimeLimitExceeded:
        return record_timeout(group_id=group_id, backend=backend, why="grading exceeded the task's time limit").status
    except INFRASTRUCTURE_ERRORS as exc:
        retries, done = settings.GAGAR_GRADING_RETRIES, self.request.retries
        if done >= retries:
            give_up(group_id=group_id, backend=backend, task_id=task_id, error=f"{describe(exc)} (gave up after {done} retries)")
            return "failed"
        delay = retry_delay(done, base=settings.GAGAR_GRADING_RETRY_BACKOFF, cap=settings.GAGAR_GRADING_RETRY_BACKOFF_MAX)
        note_retry(group_id=group_id, backend=backend, task_id=task_id, retry=done + 1, of=retries, delay=delay, exc=exc)
        kwargs = {"group_id": named, "backend": backend}  # as the first message: the retry claims through its id
        if self.request.is_eager:  # eager Celery propagates the Retry: retry in place, at once, as its own eager retries do
            return self.apply(kwargs=kwargs, retries=done + 1, task_id=task_id).result
        raise self.retry(exc=exc, countdown=delay, max_retries=retries) from exc


@shared_task(name="grading.grade_campaign_chunk", acks_late=True, reject_on_worker_lost=True, max_retries=0)
def grade_campaign_chunk_task(*, campaign_id: int, group_ids: list[int]) -> int:
    """Grade a chunk of a campaign's groups (grading.jobs.campaigns); a redelivered chunk
    counts only the groups not counted yet. Each group's grading has its own fallback, so
    no time limit is caught here: a killed chunk is delivered again."""
    from grading.jobs.campaigns import grade_chunk

    return grade_chunk(campaign_id=campaign_id, group_ids=group_ids)


@shared_task(name="grading.tidy_repo_cache")
def tidy_repo_cache_task() -> dict:
    """Celery beat, hourly (gagar_web/celery.py): old worktrees, then mirrors past the budget."""
    from grading.registry.workspaces import tidy_repo_cache

    return tidy_repo_cache()


@shared_task(name="grading.fetch_repo", acks_late=True)
def fetch_repo_task(*, repo: str, base_commit: str) -> str:
    """Fetch a task's repository for the group page's files view ("" when it is there, else why not)."""
    from grading.registry.workspaces import fetch_repo

    return fetch_repo(repo=repo, base_commit=base_commit)


@shared_task(name="grading.sweep_grading_jobs")
def sweep_grading_jobs_task() -> dict:
    """Celery beat, every minute (gagar_web/celery.py): send again the grading jobs no task
    holds, or fail them past their resends (grading.jobs.recovery)."""
    from grading.jobs.recovery import sweep

    return sweep()


@shared_task(name="grading.expire_person_waits")
def expire_person_waits_task() -> int:
    """Celery beat, every minute (gagar_web/celery.py): groups a jury waited on past the deadline."""
    from grading.verdicts.disagreements import expire_person_waits

    return expire_person_waits()


@shared_task(name="grading.scan_groups", acks_late=True)
def scan_groups_task(*, group_ids: list[int]) -> int:
    """The scanners over groups just stored (grading.jobs.scans.scan_groups)."""
    from grading.jobs.scans import scan_groups

    return scan_groups(group_ids=group_ids)


@shared_task(name="grading.run_project_scanner", acks_late=True)
def run_project_scanner_task(*, scanner_id: int, run_id: int, step: int | None = None) -> dict:
    """A project's own scanner over a run or one of its steps (grading.jobs.project_scanners)."""
    from grading.jobs.project_scanners import Scope, run_scanner
    from grading.models import ProjectScanner

    scanner = ProjectScanner.objects.filter(pk=scanner_id).first()
    if scanner is None:
        return {"error": "the scanner no longer exists"}
    return run_scanner(scanner=scanner, scope=Scope(run_id, step)).as_dict()
