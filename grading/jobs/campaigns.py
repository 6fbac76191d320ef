"""Campaigns: run one built-in grader version on a scope of mixed groups in the
background, with progress, tokens, cost and latency.

A scope is a step, a run, or the groups people judged (in a run or the whole project). The
judged groups are the review desk's to name: its caller passes them in as `judged` (a
queryset of group ids), since grading never reads reviews. `start_campaign` counts the
scope's mixed groups, skips those the version has a verdict on (`skipped_existing`: running
a version again on a group it graded does nothing, no call and no new verdict), and queues
the rest in chunks of at most CHUNK groups (grading.grade_campaign_chunk), sent once the
campaign is committed. Each group, as it finishes, moves the campaign's counts, tokens, cost
and latency by atomic updates, once (its CampaignGroup row goes from pending to its
outcome); the campaign is done when every group is counted, failures included. A failing
group counts as failed and the rest go on; a grader that cannot run fails the campaign.
Cancelling stops it before its next group.

Which verdict the run's method uses is the run's policy's to say, never a campaign's: a
campaign of a grader the policy uses (its auto-grader, or a member of its jury) makes that
grader's verdict, as grading the step would; any other grader's verdicts are stored
`bench_only` and stay out of the advantages (grading.method.services.computation.policy_verdicts).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from statistics import median

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from grading.formats.groupline import MAX_INT, MAX_NAME
from grading.jobs.grade import grade_group, record_timeout
from grading.jobs.policy import auto_grader_name
from grading.models import Campaign, CampaignGroup, Group, Project, Run, Verdict
from grading.queueing import queue
from grading.registry.backends import BACKENDS, GraderUnavailable, grader_for, grader_name
from grading.registry.defined import defined_version
from grading.selectors.runs import run_named
from grading.selectors.steps import step_numbered

logger = logging.getLogger(__name__)

GRADE_CAMPAIGN_CHUNK = "grading.grade_campaign_chunk"  # grading.jobs.tasks.grade_campaign_chunk_task

CHUNK = 20  # groups per task: one task never holds a worker for a whole run


class CampaignError(ValueError):
    """A refused campaign; `field` names what was wrong, `status` the HTTP status it is."""

    def __init__(self, field: str, message: str, *, status: int = 400):
        super().__init__(message)
        self.field = field
        self.status = status


@dataclass(frozen=True)
class Scope:
    kind: str  # Campaign.Scope
    run: Run | None = None
    step: int | None = None


SCOPE_KEYS = ("run", "step", "judged")


def parse_scope(project: Project, value: object) -> Scope:
    """The scope of `{"run", "step"}`, `{"run"}` or `{"judged": true, "run"?}` in `project`;
    CampaignError naming the field (`scope.run`, ...) otherwise, a 404 for a run or step that
    is not there."""
    shapes = '{"run": R, "step": N}, {"run": R} or {"judged": true} with an optional "run"'
    if not isinstance(value, dict):
        raise CampaignError("scope", f"scope must be an object: {shapes}")
    unknown = sorted(set(value) - set(SCOPE_KEYS))
    if unknown:
        raise CampaignError(f"scope.{unknown[0][:40]}", f"unknown field {unknown[0][:40]!r}; a scope is {shapes}")
    judged = value.get("judged", False)
    if not isinstance(judged, bool):
        raise CampaignError("scope.judged", "judged must be true or false")
    run = None
    if "run" in value:
        name = value["run"]
        if not isinstance(name, str) or not name:
            raise CampaignError("scope.run", "run must be a run's name")
        run = run_named(project, name)
        if run is None:
            raise CampaignError("scope.run", f"no run {name[:MAX_NAME]!r} in {project.name}", status=404)
    step = value.get("step")
    if step is not None:
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_INT:
            raise CampaignError("scope.step", f"step must be a whole number from 0 to {MAX_INT}")
        if judged:
            raise CampaignError("scope.step", "a judged scope takes a run or the whole project, not a step")
        if run is None:
            raise CampaignError("scope.run", "a step's scope needs its run")
        if step_numbered(run, step) is None:
            raise CampaignError("scope.step", f"run {run.name!r} has no step {step}", status=404)
        return Scope(Campaign.Scope.STEP, run, step)
    if judged:
        return Scope(Campaign.Scope.JUDGED, run)
    if run is None:
        raise CampaignError("scope.run", f"scope needs a run, or judged: true; a scope is {shapes}")
    return Scope(Campaign.Scope.RUN, run)


def resolve_grader(project: Project, value: object) -> tuple[str, str]:
    """(backend, version name) of `value`: a backend ("heuristic", "llm"), the name of a
    built-in's current version in the project (e.g. heuristic@1), or a version of one of the
    project's defined LLM graders (grading.registry.defined; its backend "llm"). CampaignError otherwise."""
    if not isinstance(value, str) or not value:
        raise CampaignError("grader", f"grader must be one of {', '.join(BACKENDS)} or the name of one's current version")
    if defined_version(project.pk, value) is not None:
        try:
            grader_for(value, project.pk)  # refused now if its endpoint is not configured here
        except GraderUnavailable as exc:
            raise CampaignError("grader", str(exc)) from None
        return "llm", value
    current: dict[str, str] = {}
    for backend in BACKENDS:
        try:
            current[backend] = grader_name(backend, project.pk)
        except GraderUnavailable as exc:
            if value == backend:
                raise CampaignError("grader", str(exc)) from None
    chosen = value if value in BACKENDS else next((b for b, name in current.items() if name == value), None)
    if chosen is None:
        offered = ", ".join([*BACKENDS, *current.values()])
        raise CampaignError(
            "grader", f"grader {value[:100]!r} is not a built-in grader's current version; choose one of {offered}"
        )
    try:
        grader_for(chosen, project.pk)  # refused now, in the request, if it cannot run here
    except GraderUnavailable as exc:
        raise CampaignError("grader", str(exc)) from None
    return chosen, current[chosen]


def scope_groups(project: Project, scope: Scope, judged: QuerySet | None = None) -> QuerySet:
    """The scope's groups to judge (mixed, or a comparison's)."""
    groups = Group.objects.filter(run__project=project, to_judge=True)
    if scope.run is not None:
        groups = groups.filter(run=scope.run)
    if scope.kind == Campaign.Scope.STEP:
        if scope.step is None:
            raise TypeError("a step's scope needs its step number")
        groups = groups.filter(step__number=scope.step)
    elif scope.kind == Campaign.Scope.JUDGED:
        if judged is None:
            raise TypeError("a judged scope needs the judged groups' ids")
        groups = groups.filter(pk__in=judged)
    return groups


def spent_today(project_id: int) -> tuple[int, float]:
    """(model tokens, US dollars) the project's campaigns spent in the last 24 hours: those
    created since, and those still running whenever they started. Dollars count only what
    verdicts priced (GRADER_PRICE_PER_MTOK_*); an unpriced grader's spend is its tokens."""
    since = timezone.now() - timedelta(days=1)
    spent = Campaign.objects.filter(
        Q(created_at__gte=since) | Q(status__in=Campaign.ACTIVE), project_id=project_id, backend="llm"
    ).aggregate(
        tokens=Coalesce(Sum(F("prompt_tokens") + F("completion_tokens")), Value(0)),
        usd=Coalesce(Sum("cost_usd"), Value(0.0)),
    )
    return int(spent["tokens"]), float(spent["usd"])


def over_budget(project_id: int) -> str | None:
    """Why the project may not spend more on LLM campaigns today, or None while it may.

    The operator's caps per project and rolling 24 hours (GAGAR_CAMPAIGN_TOKENS_PER_DAY,
    GAGAR_CAMPAIGN_USD_PER_DAY; 0 is no cap): a project admin starts campaigns, the operator
    pays the model. Checked when a campaign starts and before each group, so concurrent
    chunks may pass a cap by at most the groups they have in flight."""
    tokens_cap, usd_cap = settings.GAGAR_CAMPAIGN_TOKENS_PER_DAY, settings.GAGAR_CAMPAIGN_USD_PER_DAY
    if not tokens_cap and not usd_cap:
        return None
    tokens, usd = spent_today(project_id)
    if tokens_cap and tokens >= tokens_cap:
        return (
            f"the project's LLM campaigns used {tokens:,} model tokens in the last 24 hours, "
            f"the operator's cap is {tokens_cap:,} (GAGAR_CAMPAIGN_TOKENS_PER_DAY)"
        )
    if usd_cap and usd >= usd_cap:
        return (
            f"the project's LLM campaigns cost ${usd:,.2f} in the last 24 hours, "
            f"the operator's cap is ${usd_cap:,.2f} (GAGAR_CAMPAIGN_USD_PER_DAY)"
        )
    return None


def start_campaign(*, project: Project, grader: str, scope: Scope, judged: QuerySet | None = None, user=None) -> Campaign:
    """A campaign of `grader` (see resolve_grader) on `scope`, its groups queued after the commit.
    An LLM campaign is refused (429) while the project is over its daily budget (over_budget)."""
    backend, name = resolve_grader(project, grader)
    if backend == "llm" and (why := over_budget(project.pk)):
        raise CampaignError("grader", f"{why}; try again later", status=429)
    with transaction.atomic():
        groups = scope_groups(project, scope, judged)
        ids = list(groups.order_by("pk").values_list("pk", flat=True))
        graded = set(Verdict.objects.filter(group_id__in=groups, grader=name).values_list("group_id", flat=True))
        todo = [pk for pk in ids if pk not in graded]
        campaign = Campaign.objects.create(
            project=project,
            grader=name,
            backend=backend,
            scope=scope.kind,
            run=scope.run,
            step_number=scope.step,
            total=len(ids),
            skipped_existing=len(ids) - len(todo),
            created_by=user if user is not None and user.is_authenticated else None,
        )
        if not todo:  # nothing to grade: done at once, having done nothing
            now = timezone.now()
            Campaign.objects.filter(pk=campaign.pk).update(status=Campaign.Status.DONE, started_at=now, finished_at=now)
        else:
            CampaignGroup.objects.bulk_create(CampaignGroup(campaign=campaign, group_id=pk) for pk in todo)
            chunks = [todo[i : i + CHUNK] for i in range(0, len(todo), CHUNK)]

            def enqueue():
                for chunk in chunks:
                    queue(GRADE_CAMPAIGN_CHUNK, campaign_id=campaign.pk, group_ids=chunk)

            transaction.on_commit(enqueue)
    campaign.refresh_from_db()
    return campaign


def cancel_campaign(campaign: Campaign) -> bool:
    """Stop a queued or running campaign before its next group; False when it had ended."""
    stopped = Campaign.objects.filter(pk=campaign.pk, status__in=Campaign.ACTIVE).update(
        status=Campaign.Status.CANCELLED, finished_at=timezone.now()
    )
    if stopped:
        _settle_latency(campaign.pk)
    campaign.refresh_from_db()
    return bool(stopped)


def grade_chunk(*, campaign_id: int, group_ids: list[int]) -> int:
    """Grade the chunk's groups one by one while the campaign runs; how many were counted."""
    Campaign.objects.filter(pk=campaign_id, status=Campaign.Status.QUEUED).update(
        status=Campaign.Status.RUNNING, started_at=timezone.now()
    )
    counted = 0
    policy: dict[int, bool] = {}  # run id -> whether the campaign's grader is one its policy uses
    for position, group_id in enumerate(group_ids):
        campaign = Campaign.objects.filter(pk=campaign_id).only("status", "grader", "backend", "project_id").first()
        if campaign is None or campaign.status != Campaign.Status.RUNNING:
            break  # cancelled, failed, or gone
        row = CampaignGroup.objects.filter(campaign_id=campaign_id, group_id=group_id).select_related("group__run").first()
        if row is None or row.outcome != CampaignGroup.Outcome.PENDING:
            continue  # counted already (a redelivered chunk)
        if campaign.backend == "llm" and (why := over_budget(campaign.project_id)):
            _fail(campaign_id, f"stopped before its next group: {why}")
            break
        run = row.group.run
        if run.pk not in policy:
            policy[run.pk] = _policy_uses(run, campaign.grader)
        try:
            counted += _grade_one(campaign, row, bench_only=not policy[run.pk])
        except GraderUnavailable as exc:  # it cannot run here (any more): no group will do better
            _fail(campaign_id, str(exc))
            break
        except SoftTimeLimitExceeded:  # the group in flight timed out (counted); the rest go on in a new task
            counted += 1
            if rest := group_ids[position + 1 :]:
                queue(GRADE_CAMPAIGN_CHUNK, campaign_id=campaign_id, group_ids=rest)
            break
    return counted


def _policy_uses(run: Run, grader: str) -> bool:
    """Whether `run`'s policy uses `grader`'s verdicts: its auto-grader, or a member of its jury."""
    if run.jury is not None and grader in run.jury.members:
        return True
    return auto_grader_name(run) == grader


def _runner(campaign: Campaign) -> str:
    """What grades the campaign's groups: its backend, or the version of a defined LLM grader."""
    if campaign.backend == "llm" and not campaign.grader.startswith("llm:"):
        return campaign.grader
    return campaign.backend


def _grade_one(campaign: Campaign, row: CampaignGroup, *, bench_only: bool) -> int:
    runner = _runner(campaign)
    name = grader_name(runner, campaign.project_id)
    if name != campaign.grader:  # the project's rubric guide changed: another version now
        raise GraderUnavailable(f"the {campaign.backend} grader is {name} now, not {campaign.grader}; start a new campaign")
    started = time.monotonic()
    try:
        verdict = grade_group(group_id=row.group_id, backend=runner, bench_only=bench_only)
    except GraderUnavailable:
        raise
    except SoftTimeLimitExceeded:  # as the grading task does: a timeout verdict, the group falls back
        verdict = record_timeout(
            group_id=row.group_id, backend=runner, why="grading exceeded the task's time limit", bench_only=bench_only
        )
        _count(row, CampaignGroup.Outcome.FAILED, {}, round(time.monotonic() - started, 3), "; ".join(verdict.errors or []))
        raise
    except Exception as exc:  # one group's failure is counted and the rest go on
        logger.exception("campaign %s: group %s failed", campaign.pk, row.group_id)
        return _count(row, CampaignGroup.Outcome.FAILED, {}, round(time.monotonic() - started, 3), f"{type(exc).__name__}: {exc}")
    usage = verdict.raw.get("usage") if isinstance(verdict.raw, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    latency = usage.get("latency_s")
    latency = float(latency) if isinstance(latency, (int, float)) else round(time.monotonic() - started, 3)
    if verdict.status == Verdict.Status.VALID:
        return _count(row, CampaignGroup.Outcome.GRADED, usage, latency, "")
    return _count(row, CampaignGroup.Outcome.FAILED, usage, latency, "; ".join(map(str, verdict.errors or []))[:2000])


def _number(usage: dict, key: str) -> float | None:
    value = usage.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def _count(row: CampaignGroup, outcome: str, usage: dict, latency: float, error: str) -> int:
    """Count the group once (its row leaves pending), move the campaign's figures, and finish
    the campaign when this was its last group. Returns 1 when counted now, 0 when it was before."""
    with transaction.atomic():
        moved = CampaignGroup.objects.filter(pk=row.pk, outcome=CampaignGroup.Outcome.PENDING).update(
            outcome=outcome, latency_s=latency, error=error
        )
        if not moved:
            return 0
        counter = "graded" if outcome == CampaignGroup.Outcome.GRADED else "failed"
        changes = {
            counter: F(counter) + 1,
            "prompt_tokens": F("prompt_tokens") + int(_number(usage, "prompt_tokens") or 0),
            "completion_tokens": F("completion_tokens") + int(_number(usage, "completion_tokens") or 0),
            "latency_sum_s": F("latency_sum_s") + latency,
            "latency_max_s": Greatest(Coalesce(F("latency_max_s"), Value(latency)), Value(latency)),
        }
        cost = _number(usage, "cost_usd")
        if cost is not None:
            changes["cost_usd"] = Coalesce(F("cost_usd"), Value(0.0)) + cost
        Campaign.objects.filter(pk=row.campaign_id).update(**changes)
        finished = Campaign.objects.filter(
            pk=row.campaign_id,
            status=Campaign.Status.RUNNING,
            total=F("graded") + F("skipped_existing") + F("failed"),
        ).update(status=Campaign.Status.DONE, finished_at=timezone.now())
        if finished:  # in the same transaction: nobody sees a campaign done without its median
            _settle_latency(row.campaign_id)
    return 1


def _fail(campaign_id: int, why: str) -> None:
    with transaction.atomic():
        failed = Campaign.objects.filter(pk=campaign_id, status__in=Campaign.ACTIVE).update(
            status=Campaign.Status.FAILED, error=why[:2000], finished_at=timezone.now()
        )
        if failed:
            _settle_latency(campaign_id)


def _settle_latency(campaign_id: int) -> None:
    """The median latency per group of the groups it graded, once it has ended."""
    rows = CampaignGroup.objects.filter(campaign_id=campaign_id, latency_s__isnull=False).values_list("latency_s", flat=True)
    latencies = [latency for latency in rows if latency is not None]
    if latencies:
        Campaign.objects.filter(pk=campaign_id).update(latency_p50_s=round(median(latencies), 3))
