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

import ipaddress
import logging
import socket
import time
from urllib.parse import urlparse

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from grading.grader.base import GraderResult
from grading.grader.heuristic import HeuristicGrader
from grading.grader.llm import DEFAULT_MAX_TOKENS as LLM_DEFAULT_TOKENS
from grading.grader.llm import DEFAULT_MAX_TURNS as LLM_DEFAULT_TURNS
from grading.grader.llm import VERSION as LLM_VERSION
from grading.grader.llm import LLMGrader
from grading.grader.prescreen import screen_group
from grading.grader.tools import TOOLS
from grading.jobs.tasks import grade_group_task, scan_groups_task
from grading.jobs.worker import release_connections
from grading.method.guide import DEFAULT_GUIDE, Guide, guide_json, guide_version
from grading.method.project_guides import guide_for
from grading.method.services import mark_stale
from grading.models import CheatDecision, GradingJob, Group, Rollout, Step, Verdict
from grading.registry.checks import check_budget_for
from grading.registry.defined import defined_version, endpoint_of, version_guide
from grading.registry.future_history import holds_future_history
from grading.registry.versions import ensure_version
from grading.registry.workspaces import load_workspace
from grading.verdicts.identical import settle_identical
from grading.verdicts.store import GradeInput, record_verdict

logger = logging.getLogger(__name__)

BACKENDS = ("heuristic", "llm")


class GraderUnavailable(RuntimeError):
    """The chosen backend cannot run here (not configured, or a refused address)."""


def check_grader_url(url: str, variable: str = "GRADER_BASE_URL") -> None:
    """Refuse loopback, link-local and private targets unless settings allow them (SSRF).

    `url` is the value of the environment variable `variable`; messages name the variable,
    never the value or a part of it (a key put where the URL goes must not show in an answer)."""
    parsed = urlparse(url)
    try:
        hostname = parsed.hostname
    except ValueError:
        hostname = None
    if parsed.scheme not in {"http", "https"} or not hostname:
        raise GraderUnavailable(f"${variable} is not an http(s) URL (its value is never shown)")
    if settings.GRADER_ALLOW_PRIVATE_NETWORK:
        return
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(hostname, parsed.port or 443)}
    except (socket.gaierror, UnicodeError, ValueError):
        raise GraderUnavailable(f"cannot resolve the host in ${variable}") from None
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%")[0])
        # not is_global also covers what is neither private nor public, e.g. carrier-grade NAT 100.64.0.0/10
        if (
            ip.is_loopback
            or ip.is_link_local
            or ip.is_private
            or ip.is_reserved
            or ip.is_multicast
            or ip.is_unspecified
            or not ip.is_global
        ):
            raise GraderUnavailable(
                f"the host in ${variable} resolves to a non-public address; "
                "set GRADER_ALLOW_PRIVATE_NETWORK=true to allow a local model server"
            )


def grader_name(backend: str, project_id: int | None = None) -> str:
    """The name `backend` grades under in the project (e.g. heuristic@1, or llm:<model>@1.g<guide>
    when the project edited its rubric guide), without building it: no DNS lookup of the
    grader's host and no client, so pages and ingest can ask it cheaply (the LLM grader's name
    reads the project's guide: one query). Raises GraderUnavailable when the backend is
    unknown or not configured."""
    if backend == "heuristic":
        return HeuristicGrader.name
    if backend == "llm":
        if not (settings.GRADER_BASE_URL and settings.GRADER_MODEL):
            raise GraderUnavailable("the LLM grader needs GRADER_BASE_URL and GRADER_MODEL")
        return LLMGrader.name_for(settings.GRADER_MODEL, guide_for(project_id), max_turns=settings.GRADER_MAX_TURNS)
    if defined_version(project_id, backend) is not None:
        return backend
    raise GraderUnavailable(_unknown(backend))


def _unknown(backend: str) -> str:
    choices = ", ".join(BACKENDS)
    return f"unknown grader {backend[:100]!r}; choose one of {choices} or one of the project's defined graders (name@version)"


def grader_for(backend: str, project_id: int | None = None):
    """The grader `backend` names: a built-in backend, or a version of one of the project's
    defined LLM graders (grading.registry.defined), built from the worker's environment."""
    if backend == "heuristic":
        return HeuristicGrader()
    if backend == "llm":
        if not (settings.GRADER_BASE_URL and settings.GRADER_MODEL):
            raise GraderUnavailable("the LLM grader needs GRADER_BASE_URL and GRADER_MODEL")
        check_grader_url(settings.GRADER_BASE_URL)
        return LLMGrader(
            base_url=settings.GRADER_BASE_URL,
            model=settings.GRADER_MODEL,
            api_key=settings.GRADER_API_KEY or "none",
            max_turns=settings.GRADER_MAX_TURNS,
            request_timeout=settings.GRADER_REQUEST_TIMEOUT,
        )
    version = defined_version(project_id, backend)
    if version is None:
        raise GraderUnavailable(_unknown(backend))
    try:
        base_url, api_key = endpoint_of(version)
    except ValueError as exc:
        raise GraderUnavailable(str(exc)) from None
    check_grader_url(base_url, version.endpoint_env)
    grader = LLMGrader(
        base_url=base_url,
        model=version.model,
        api_key=api_key or "none",
        max_turns=version.budgets.get("max_turns", LLM_DEFAULT_TURNS),
        max_tokens_budget=version.budgets.get("max_tokens", LLM_DEFAULT_TOKENS),
        request_timeout=version.budgets.get("request_timeout_s", settings.GRADER_REQUEST_TIMEOUT),
    )
    grader.name = version.name
    grader.fixed_guide = version_guide(version)
    return grader


def queue_step(*, step: Step, backend: str) -> list[GradingJob]:
    """Queue (or queue again) every mixed group of the step that has no verdict from this grader yet."""
    grader_for(backend, step.run.project_id)  # fail here, in the request, if it cannot run
    name = grader_name(backend, step.run.project_id)
    groups = list(step.groups.filter(is_mixed=True).exclude(verdicts__grader=name).values_list("id", flat=True))
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
        Group.objects.filter(pk__in=group_ids, is_mixed=True)
        .exclude(verdicts__grader=name)
        .exclude(grading_jobs__grader=name)
        .values_list("id", flat=True)
    )
    return _queue(groups, backend=backend, grader_name=name, again=False)


def _queue(group_ids: list[int], *, backend: str, grader_name: str, again: bool) -> list[GradingJob]:
    """Create (or, when `again`, reset) the jobs and send their tasks once they are committed.

    The jobs are written before any task is sent, so a verdict can tell whether it is the
    step's last one in flight (grading.method.services.mark_stale recomputes only then).
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
                grade_group_task.delay(group_id=group_id, backend=backend)

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
        _finish(job, existing, error="")
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
        _finish(job, settled, error="")  # no model call: the run's policy settles identical patches
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
    _finish(job, verdict, error="; ".join(result.errors)[:2000])
    _register(grader, group.run.project_id, guide)
    return verdict


def _name_for_project(grader, project_id: int) -> Guide:
    """The project's rubric guide, and the grader named for it (an LLM grader's name carries the
    guide's version); a defined grader's own guide, its name unchanged."""
    if (fixed := getattr(grader, "fixed_guide", None)) is not None:
        return fixed
    guide = guide_for(project_id)
    if isinstance(grader, LLMGrader):
        grader.name = LLMGrader.name_for(grader.model, guide, max_turns=grader.max_turns, max_tokens=grader.max_tokens_budget)
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
    _finish(job, verdict, error=why)
    return verdict


def record_prescreen(*, group: Group, workspace) -> int:
    """Store the scanners' findings on the group's rollouts (grading.grader.prescreen): one
    decision per rollout and scanner version, citing every finding of it, so running a version
    again on a rollout does nothing (whatever an auditor wrote on its decision since).

    A finding that makes its rollout a cheat (a leak, or a tampering that scored:
    prescreen.catalogue.is_cheat) is stored decided — confirmed by the scanner, so the reward
    is zeroed before the statistics as for any confirmed cheat (docs/method.md §1), until an
    auditor overturns it. Any other finding (a tampering whose tests still ran, test lines
    changed) is stored open: evidence for the auditor and the grader, never a cheat by itself.
    Returns how many decisions were stored now."""
    workspace.future_history = holds_future_history(group.run.project, workspace.instance_id)
    signals = screen_group(workspace)
    if not signals:
        return 0
    rollouts = {r.index: r for r in Rollout.objects.filter(group=group).only("id", "index")}
    known = set(
        CheatDecision.objects.filter(rollout__group=group, source=CheatDecision.Source.PRESCREEN).values_list(
            "rollout_id", "author"
        )
    )
    found: dict[tuple[int, str], list] = {}
    for signal in signals:
        rollout = rollouts.get(signal.rollout)
        if rollout is not None and (rollout.pk, signal.scanner) not in known:
            found.setdefault((rollout.pk, signal.scanner), []).append(signal)
    now = timezone.now()
    fresh = []
    for (rollout_id, scanner), same in found.items():
        cheat = any(s.cheat for s in same)
        first = next((s for s in same if s.cheat), same[0])
        more = f" (and {len(same) - 1} more)" if len(same) > 1 else ""
        fresh.append(
            CheatDecision(
                rollout_id=rollout_id,
                source=CheatDecision.Source.PRESCREEN,
                reason=f"{first.signal}: {first.detail}{more}"[:1000],
                author=scanner,
                evidence=[s.evidence.as_dict() for s in same if s.evidence][:50],
                confirmed=True if cheat else None,
                decided_at=now if cheat else None,
            )
        )
    CheatDecision.objects.bulk_create(fresh)
    if any(d.confirmed for d in fresh):
        mark_stale(step_ids=[group.step_id])
    return len(fresh)


def queue_scans(*, group_ids: list[int]) -> None:
    """Scan these stored groups once the transaction that stored them commits (scan_groups):
    every group with a pass, graded or not, so a cheat in a group no grader reads is zeroed too.
    Call it inside that transaction; a broker fault after the commit loses no stored row.

    The groups are marked due first: their step is not final until they are scanned, or until
    the run's grading deadline has passed since (a worker that never comes holds no trainer
    longer than grading would), so a trainer's final advantages already have the scanners'
    cheats zeroed (grading.waits.progress)."""
    if not group_ids:
        return

    def send() -> None:
        Group.objects.filter(pk__in=group_ids).update(scan_due_at=timezone.now())
        scan_groups_task.delay(group_ids=group_ids)

    transaction.on_commit(send, robust=True)


def scan_groups(*, group_ids: list[int]) -> int:
    """Run the scanners over the passing rollouts of these groups and store what they find
    (record_prescreen; a scanner version already run on a rollout stores nothing). A failing
    rollout's reward is 0 already, so a cheat there moves no credit: the grading job, which
    reads the whole group, scans those. Returns how many decisions were stored."""
    stored = 0
    for group in Group.objects.filter(pk__in=group_ids, n_passed__gt=0).select_related("run__project", "task", "step"):
        try:
            workspace = load_workspace(group)
            workspace.rollouts = [r for r in workspace.rollouts if r.passed]
            with transaction.atomic():
                stored += record_prescreen(group=group, workspace=workspace)
                Group.objects.filter(pk=group.pk).update(scan_due_at=None)
        except Exception:  # one group's failure must not leave the others unread; it stays due
            logger.exception("scanning group %s failed; its step waits until its deadline", group.pk)
    Group.objects.filter(pk__in=group_ids, scan_due_at__isnull=False, n_passed=0).update(scan_due_at=None)
    return stored


def _finish(job: GradingJob, verdict: Verdict, *, error: str) -> None:
    usage = (verdict.raw or {}).get("usage", {})
    GradingJob.objects.filter(pk=job.pk).update(
        status=GradingJob.Status.DONE if verdict.status == Verdict.Status.VALID else GradingJob.Status.FAILED,
        verdict=verdict,
        finished_at=timezone.now(),
        usage=usage,
        latency_s=usage.get("latency_s"),
        error=error or "; ".join(verdict.errors or [])[:2000],
    )
