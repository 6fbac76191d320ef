"""Build a GroupWorkspace from the database (the Django side of the grader)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from grading.grader.workspace import GOLD_STATE, TEST_PATCH_STATE, GroupWorkspace, RolloutView
from grading.method.guide import Guide
from grading.method.project_guides import guide_for
from grading.models import Group, RolloutContent, Task
from grading.queueing import queue
from grading.repos.source import RepoSource
from grading.repos.types import RepoError, RepoView
from grading.repos.view import GitRepoView, cleanup


def load_workspace(group: Group, *, guide: Guide | None = None, passed_only: bool = False) -> GroupWorkspace:
    """The group's workspace with every rollout, or only its passing ones (`passed_only`: the
    failing rollouts' bodies are then never read from the database)."""
    contents_of = RolloutContent.objects.filter(rollout__group=group)
    rollouts_of = group.rollouts.all()
    if passed_only:
        contents_of, rollouts_of = contents_of.filter(rollout__passed=True), rollouts_of.filter(passed=True)
    contents = {c.rollout_id: c for c in contents_of}
    rollouts = []
    for rollout in rollouts_of.order_by("index"):
        content = contents.get(rollout.pk) or RolloutContent()
        rollouts.append(
            RolloutView(
                index=rollout.index,
                passed=rollout.passed,
                patch=content.patch,
                messages=content.messages or [],
                tests=content.tests or {},
                test_log=content.test_log,
                exit_status=rollout.exit_status,
                stats=rollout.stats,
            )
        )
    return workspace_for(group, rollouts, guide=guide if guide is not None else guide_for(group.run.project_id))


def find_group(*, project: str, run: str, uid: str) -> Group | None:
    return Group.objects.select_related("task", "run").filter(run__project__name=project, run__name=run, uid=uid).first()


def repo_source() -> RepoSource | None:
    """The configured repository source (grading.repos.source), or None when GAGAR_REPO_CACHE is empty."""
    if not settings.GAGAR_REPO_CACHE:
        return None
    return RepoSource(
        url_template=settings.GAGAR_REPO_URL_TEMPLATE,
        cache=Path(settings.GAGAR_REPO_CACHE),
        budget_bytes=settings.GAGAR_REPO_CACHE_BYTES,
        fetch_timeout=settings.GAGAR_REPO_FETCH_TIMEOUT,
    )


def tidy_repo_cache() -> dict[str, int]:
    """Worktrees unused for GAGAR_REPO_TREE_MAX_AGE seconds removed, then the least recently used
    until they fit half the cache's budget; then mirrors past the budget, least recently used
    first (each with its worktrees). What was removed, counted. Periodic (Celery beat)."""
    source = repo_source()
    if source is None:
        return {"trees": 0, "mirrors": 0}
    trees = cleanup(source.trees_dir, max_age_s=settings.GAGAR_REPO_TREE_MAX_AGE, max_bytes=source.budget_bytes // 2)
    return {"trees": len(trees), "mirrors": len(source.evict())}


FETCH_STATE_KEY = "gagar:repo-fetch:{name}"
HEX = frozenset("0123456789abcdef")


def names_a_repository(task: Task) -> bool:
    """Whether the task names a repository and a full commit id in it (40 or 64 hex digits, as
    SWE-bench-style tasks do): only then has it a workspace. An abbreviation could name another
    commit tomorrow, and made-up ids (the demo's) name none."""
    commit = (task.base_commit or "").lower()
    return bool(task.repo) and len(commit) in (40, 64) and set(commit) <= HEX


@dataclass(frozen=True)
class FetchState:
    """Where a task's repository is for the group page: `fetched`, being fetched (`pending`, queued
    from the page), or `error` (why the last fetch from the page failed)."""

    fetched: bool
    pending: bool = False
    error: str = ""


def has_workspace(task: Task) -> bool:
    """The task's repository can be read here: it names one at a full commit and a cache is configured."""
    return names_a_repository(task) and bool(settings.GAGAR_REPO_CACHE)


def fetch_state(task: Task, *, base_missing: bool = False) -> FetchState | None:
    """None when the task names no repository or none is configured. No git command runs.
    `base_missing`: the caller found the mirror without the task's base commit (NotFetched), so
    a mirror on disk is not enough."""
    source = repo_source()
    if source is None or not names_a_repository(task):
        return None
    try:
        name = source.safe_name(task.repo)
    except RepoError as exc:
        return FetchState(fetched=False, error=str(exc))
    if not base_missing and (source.mirror_path(task.repo) / "HEAD").exists():
        return FetchState(fetched=True)
    said = cache.get(FETCH_STATE_KEY.format(name=name)) or {}
    return FetchState(fetched=False, pending=said.get("pending", False), error=said.get("error", ""))


def queue_fetch(task: Task) -> None:
    """Fetch the task's repository in the background (grading.fetch_repo, queued once the
    request's transaction commits), once at a time; the group page polls fetch_state until it is
    there. A page request never waits on a fetch."""
    source = repo_source()
    if source is None or not names_a_repository(task):
        return
    key = FETCH_STATE_KEY.format(name=source.safe_name(task.repo))
    queued = cache.add(key, {"pending": True}, timeout=int(source.fetch_timeout) + 60)
    if not queued and not (cache.get(key) or {}).get("pending"):  # a failure on record: try again
        cache.set(key, {"pending": True}, timeout=int(source.fetch_timeout) + 60)
        queued = True
    if queued:
        repo, base_commit = task.repo, task.base_commit
        transaction.on_commit(lambda: queue("grading.fetch_repo", repo=repo, base_commit=base_commit))  # jobs.tasks


def fetch_repo(*, repo: str, base_commit: str) -> str:
    """Fetch `repo` into the mirror cache with `base_commit` in it; why not ("" when it is there)."""
    source = repo_source()
    if source is None:
        return "no repository cache is configured (GAGAR_REPO_CACHE)"
    try:
        key = FETCH_STATE_KEY.format(name=source.safe_name(repo))
    except RepoError as exc:
        return str(exc)
    try:
        source.mirror(repo, base_commit)
    except RepoError as exc:
        cache.set(key, {"error": str(exc)}, 600)  # the page shows it, and offers to try again
        return str(exc)
    cache.delete(key)
    return ""


def repo_view_for(task: Task, rollouts: list[RolloutView], *, fetch: bool = True) -> RepoView | None:
    """The repository at the task's base commit and at each rollout's state, or None when the
    task names no repository or none is configured. Lazy: it fetches and applies on first read;
    with `fetch=False` (a page request) it only reads what the cache holds (else NotFetched)."""
    source = repo_source()
    if source is None or not names_a_repository(task):
        return None
    return GitRepoView(source, task.repo, task.base_commit, {r.index: r.patch for r in rollouts}, fetch=fetch)


def reference_view_for(task: Task) -> RepoView | None:
    """The repository with the task's own patches as states: the gold patch (GOLD_STATE) and
    the test patch (TEST_PATCH_STATE); None when it has no gold patch or no repository. Lazy, as
    repo_view_for's: read only by the differential matrix when checks run."""
    source = repo_source()
    if source is None or not names_a_repository(task) or not (task.gold_patch or "").strip():
        return None
    patches = {GOLD_STATE: task.gold_patch, TEST_PATCH_STATE: task.test_patch or ""}
    return GitRepoView(source, task.repo, task.base_commit, patches)


def workspace_for(group: Group, rollouts: list[RolloutView], *, guide: Guide) -> GroupWorkspace:
    """The grader's workspace of `group` (its task read from `group.task`) around `rollouts`:
    the one place a GroupWorkspace is assembled, for the live grader and the SFT export alike."""
    task = group.task
    return GroupWorkspace(
        uid=group.uid,
        instance_id=task.instance_id,
        repo=task.repo,
        base_commit=task.base_commit,
        problem_statement=task.problem_statement,
        gold_patch=task.gold_patch,
        test_patch=task.test_patch,
        fail_to_pass=list(task.fail_to_pass or []),
        pass_to_pass=list(task.pass_to_pass or []),
        rollouts=rollouts,
        repo_view=repo_view_for(task, rollouts),
        reference_view=reference_view_for(task),
        guide=guide,  # the project's rubric guide goes into the grader's prompt
    )
