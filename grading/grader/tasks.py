"""Celery tasks of the grader: thin, they take ids and call one service (imported in the body,
so the service can import this module at its top and queue through transaction.on_commit)."""

from __future__ import annotations

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded


@shared_task(name="grading.grade_group", acks_late=True, reject_on_worker_lost=True, max_retries=0)
def grade_group_task(*, group_id: int, backend: str) -> str:
    """Grade one mixed group. No task-level retries: the backend retries its API calls;
    a soft time limit (below the broker's visibility timeout) stores a timeout verdict."""
    from grading.grader.jobs import grade_group, record_timeout

    try:
        return grade_group(group_id=group_id, backend=backend).status
    except SoftTimeLimitExceeded:
        return record_timeout(group_id=group_id, backend=backend, why="grading exceeded the task's time limit").status


@shared_task(name="grading.grade_campaign_chunk", acks_late=True, reject_on_worker_lost=True, max_retries=0)
def grade_campaign_chunk_task(*, campaign_id: int, group_ids: list[int]) -> int:
    """Grade a chunk of a campaign's groups (grading.grader.campaigns); a redelivered chunk
    counts only the groups not counted yet. Each group's grading has its own fallback, so
    no time limit is caught here: a killed chunk is delivered again."""
    from grading.grader.campaigns import grade_chunk

    return grade_chunk(campaign_id=campaign_id, group_ids=group_ids)


@shared_task(name="grading.tidy_repo_cache")
def tidy_repo_cache_task() -> dict:
    """Celery beat, hourly (gagar_web/celery.py): old worktrees, then mirrors past the budget."""
    from grading.grader.loading import tidy_repo_cache

    return tidy_repo_cache()


@shared_task(name="grading.fetch_repo", acks_late=True)
def fetch_repo_task(*, repo: str, base_commit: str) -> str:
    """Fetch a task's repository for the group page's files view ("" when it is there, else why not)."""
    from grading.grader.loading import fetch_repo

    return fetch_repo(repo=repo, base_commit=base_commit)


@shared_task(name="grading.expire_person_waits")
def expire_person_waits_task() -> int:
    """Celery beat, every minute (gagar_web/celery.py): groups a jury waited on past the deadline."""
    from grading.grader.disagreements import expire_person_waits

    return expire_person_waits()
