"""Run graders on mixed groups: queue a step, grade one group idempotently, record the verdict.

One verdict per group per grader name (a database constraint). `grade_group` looks for
that verdict before calling the grader, so a task redelivered after a worker died makes
no second model call once the first one was recorded; if two deliveries race, the
constraint keeps one verdict and the loser returns it. The model call is retried in one
layer only: the grader backend (the openai client's own retries). The Celery task retries
only a database or broker error around it, and a sweep sends again a job no task holds
(grading.jobs.recovery).
A grader that fails, times out or returns an invalid verdict leaves an invalid/timeout
verdict, which makes the group fall back (docs/method.md §2); so does a group the run's
policy settles without a model call (grading.verdicts.identical).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from grading.grader.base import GraderResult
from grading.grader.llm import VERSION as LLM_VERSION
from grading.grader.llm import LLMGrader
from grading.grader.tools import TOOLS
from grading.jobs.scans import record_prescreen
from grading.jobs.worker import release_connections
from grading.method.guide import DEFAULT_GUIDE, Guide, guide_json, guide_version
from grading.method.project_guides import guide_for
from grading.models import GradingJob, Group, Jury, Step, Verdict
from grading.queueing import queue
from grading.registry.backends import grader_for, grader_name
from grading.registry.checks import check_budget_for
from grading.registry.juries import member_backends
from grading.registry.versions import ensure_version
from grading.registry.workspaces import load_workspace
from grading.verdicts.deliberation import record_jury_verdict
from grading.verdicts.identical import settle_identical
from grading.verdicts.store import GradeInput, record_verdict

logger = logging.getLogger(__name__)

GRADE_GROUP = "grading.grade_group"  # grading.jobs.tasks.grade_group_task


def queue_step(*, step: Step, backend: str) -> list[GradingJob]:
    """Queue (or queue again) every group to judge of the step (Group.to_judge: mixed, or a
    comparison's) that has no verdict from this grader yet."""
    grader_for(backend, step.run.project_id)  # fail here, in the request, if it cannot run
    name = grader_name(backend, step.run.project_id)
    groups = list(step.groups.filter(to_judge=True).exclude(verdicts__grader=name).values_list("id", flat=True))
    return _queue(groups, backend=backend, grader_name=name, again=True)


def queue_new_groups(*, group_ids: list[int], backend: str) -> list[GradingJob]:
    """Auto-grading at ingest: queue the mixed groups among `group_ids` that this grader has
    neither graded nor been asked to grade -- one job per group per grader, never twice, also
    when the same step is posted again. Call it inside the transaction that stored them."""
    if not group_ids:
        return []
    project_id = None
    if backend != "heuristic":  # the LLM grader's name depends on the project's rubric guide; a defined one is the project's
        project_id = Group.objects.filter(pk=group_ids[0]).values_list("run__project_id", flat=True).first()
    name = grader_name(backend, project_id)  # once per ingest batch: the name only, the task builds the grader
    groups = list(
        Group.objects.filter(pk__in=group_ids, to_judge=True)
        .exclude(verdicts__grader=name)
        .exclude(grading_jobs__grader=name)
        .values_list("id", flat=True)
    )
    return _queue(groups, backend=backend, grader_name=name, again=False)


def _queue(group_ids: list[int], *, backend: str, grader_name: str, again: bool) -> list[GradingJob]:
    """Create (or, when `again`, reset) the jobs and send their tasks once they are committed.

    The jobs are written before any task is sent, so a verdict can tell whether it is the
    step's last one in flight (grading.method.services.staleness.mark_stale recomputes only then).
    A job queued again restarts its group's grading deadline (queued_at). One message per
    job; the task that takes a message grades the best job then queued in its run, not
    necessarily the one it names (grading.jobs.scheduling).
    """
    if not group_ids:
        return []
    with transaction.atomic():
        existing = {
            job.group_id: job for job in GradingJob.objects.filter(group_id__in=group_ids, grader=grader_name).select_for_update()
        }
        now = timezone.now()
        jobs, fresh, requeued = [], [], []
        for group_id in group_ids:
            job = existing.get(group_id)
            if job is None:
                job = GradingJob(group_id=group_id, grader=grader_name)
                fresh.append(job)
            elif again and job.status in (GradingJob.Status.DONE, GradingJob.Status.FAILED):
                job.status, job.queued_at, job.claimed_by = GradingJob.Status.QUEUED, now, ""
                job.retries = job.resends = 0  # a fresh start: its retries and resends count again
                requeued.append(job)
            elif not again:
                continue
            jobs.append(job)
        GradingJob.objects.bulk_create(fresh)
        GradingJob.objects.bulk_update(requeued, ["status", "queued_at", "retries", "resends", "claimed_by"])
        sent = [job.group_id for job in jobs]

        def enqueue():
            for group_id in sent:
                queue(GRADE_GROUP, group_id=group_id, backend=backend)

        transaction.on_commit(enqueue, robust=True)
    return jobs


def cost_usd(backend: str, usage: dict) -> float | None:
    """What one grading cost in US dollars: its tokens at the LLM grader's configured prices
    (GRADER_PRICE_PER_MTOK_IN / _OUT, per million prompt / completion tokens); None when a
    price is not set or the backend has none, so an unknown cost is never shown as 0."""
    price_in, price_out = settings.GRADER_PRICE_PER_MTOK_IN, settings.GRADER_PRICE_PER_MTOK_OUT
    if backend != "llm" or price_in is None or price_out is None:
        return None
    prompt, completion = usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0
    return round((prompt * price_in + completion * price_out) / 1_000_000, 8)


def grade_group(*, group_id: int, backend: str, bench_only: bool = False) -> Verdict:
    """Grade one group once per grader; returns its verdict (stored earlier, or now). A
    `bench_only` verdict stays out of the method's numbers (a campaign's, grading.jobs.campaigns)."""
    group = Group.objects.select_related("task", "step", "run__project").get(pk=group_id)
    grader = grader_for(backend, group.run.project_id)
    guide = _name_for_project(grader, group.run.project_id)
    existing = Verdict.objects.filter(group=group, grader=grader.name).first()
    job, _ = GradingJob.objects.get_or_create(group=group, grader=grader.name)
    if existing is not None:  # a redelivery, or graded by another path: no second call
        finish_job(job, existing, error="")
        return existing
    GradingJob.objects.filter(pk=job.pk).update(
        status=GradingJob.Status.RUNNING, started_at=timezone.now(), attempts=F("attempts") + 1
    )
    workspace = load_workspace(group, guide=guide)
    # Checks run only while the group can still make its deadline (the run policy's, from queued_at).
    workspace.checks = check_budget_for(
        group.run.project_id, deadline=job.queued_at.timestamp() + group.run.grading_deadline_seconds
    )
    record_prescreen(group=group, workspace=workspace)
    if not bench_only and (settled := settle_identical(group=group, grader=grader.name, workspace=workspace)) is not None:
        finish_job(job, settled, error="")  # no model call: the run's policy settles identical patches
        return settled
    if isinstance(grader, LLMGrader):  # a conversation waits on the model for minutes: it holds no connection meanwhile
        release_connections()
    started = time.monotonic()
    try:
        result = grader.grade(workspace)
    except Exception as exc:  # a backend must not raise; if one does, the group falls back
        logger.exception("grader %s failed on group %s", grader.name, group.uid)
        result = GraderResult(status=Verdict.Status.INVALID, errors=[f"{type(exc).__name__}: {exc}"])
    result.usage.setdefault("latency_s", round(time.monotonic() - started, 3))
    cost = cost_usd(backend, result.usage)
    if cost is not None:
        result.usage.setdefault("cost_usd", cost)
    verdict = store_result(group=group, grader_name=grader.name, result=result, bench_only=bench_only)
    finish_job(job, verdict, error="; ".join(result.errors)[:2000])
    _register(grader, group.run.project_id, guide)
    return verdict


def _name_for_project(grader, project_id: int) -> Guide:
    """The project's rubric guide, and the grader named for it (an LLM grader's name carries the
    guide's version); a defined grader's own guide, its name unchanged."""
    if (fixed := getattr(grader, "fixed_guide", None)) is not None:
        return fixed
    guide = guide_for(project_id)
    if isinstance(grader, LLMGrader):
        grader.name = LLMGrader.name_for(
            grader.model, guide, max_turns=grader.max_turns, max_tokens=grader.max_tokens_budget, tool_mode=grader.tool_mode
        )
    return guide


def _register(grader, project_id: int, guide: Guide) -> None:
    """The version that graded, in the project's grader registry (grading.registry.versions); a
    defined grader's is there already."""
    if getattr(grader, "fixed_guide", None) is not None:
        return
    if isinstance(grader, LLMGrader):
        ensure_version(
            project_id=project_id,
            name=grader.name,
            backend="llm",
            model=grader.model,
            endpoint_env="GRADER_BASE_URL",
            api_key_env="GRADER_API_KEY",
            prompt_version=LLM_VERSION,
            guide_version=guide_version(guide),
            guide={} if guide == DEFAULT_GUIDE else dict(zip(("tiers", "dimensions"), guide_json(guide), strict=True)),
            tools=sorted(TOOLS),
            budgets={"max_turns": grader.max_turns, "max_tokens": grader.max_tokens_budget},
        )
    else:
        ensure_version(project_id=project_id, name=grader.name, backend="heuristic", prompt_version=1)


def store_result(*, group: Group, grader_name: str, result: GraderResult, bench_only: bool = False) -> Verdict:
    valid = result.status == Verdict.Status.VALID
    grades = (
        [
            GradeInput(j.index, j.tier, j.rank, cheat=j.cheat, scores=j.scores, evidence=[e.as_dict() for e in j.evidence])
            for j in result.judgments
        ]
        if valid
        else []
    )
    raw = {**result.raw, "usage": result.usage}
    try:
        verdict, _ = record_verdict(
            group=group,
            grader=grader_name,
            status=result.status,
            grades=grades,
            errors=result.errors,
            raw=raw,
            checks=result.checks,
            bench_only=bench_only,
        )
    except IntegrityError:  # a concurrent delivery stored it first
        verdict = Verdict.objects.get(group=group, grader=grader_name)
    return verdict


def record_timeout(*, group_id: int, backend: str, why: str, bench_only: bool = False) -> Verdict:
    """The task ran out of time: store a timeout verdict so the group falls back."""
    group = Group.objects.select_related("run").get(pk=group_id)
    grader = grader_for(backend, group.run.project_id)
    _name_for_project(grader, group.run.project_id)
    verdict = store_result(
        group=group,
        grader_name=grader.name,
        result=GraderResult(status=Verdict.Status.TIMEOUT, errors=[why]),
        bench_only=bench_only,
    )
    job, _ = GradingJob.objects.get_or_create(group=group, grader=grader.name)
    finish_job(job, verdict, error=why)
    return verdict


def finish_job(job: GradingJob, verdict: Verdict, *, error: str) -> None:
    """Close a job with its verdict: done when valid, failed otherwise (one definition, for the
    grading and for the sweep of grading.jobs.recovery)."""
    usage = (verdict.raw or {}).get("usage", {})
    GradingJob.objects.filter(pk=job.pk).update(
        status=GradingJob.Status.DONE if verdict.status == Verdict.Status.VALID else GradingJob.Status.FAILED,
        verdict=verdict,
        finished_at=timezone.now(),
        usage=usage,
        latency_s=usage.get("latency_s"),
        error=error or "; ".join(verdict.errors or [])[:2000],
    )


def queue_jury_step(*, step: Step, jury: Jury) -> list[GradingJob]:
    """Grade a step for its run's jury: queue every member this desk runs on the mixed groups it
    has not graded (queue_step), and make the jury's verdict now wherever its members have all
    spoken already (a jury chosen after they graded). Members that run elsewhere post theirs."""
    jobs = [job for backend in member_backends(jury) for job in queue_step(step=step, backend=backend)]
    ready = (
        step.groups.filter(to_judge=True)
        .exclude(verdicts__grader=jury.grader)
        .annotate(n=Count("verdicts", filter=Q(verdicts__grader__in=jury.members)))
        .filter(n=len(jury.members))
        .select_related("run")
    )
    for group in ready:
        record_jury_verdict(jury=jury, group=group)
    return jobs
