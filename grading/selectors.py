"""Reads for pages and the API. Large bodies are loaded only where a page shows them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Case, Count, F, FloatField, JSONField, OuterRef, Q, QuerySet, Subquery, Sum, When
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce, Length
from django.shortcuts import get_object_or_404

from grading.formats import params
from grading.formats.groupline import MAX_INT, MAX_NAME, MAX_UID, stored_rollout
from grading.method.partial import drop_of
from grading.method.services.computation import policy_verdicts
from grading.method.services.mappings import active_mapping
from grading.method.turn_weights import cited_turns
from grading.models import (
    AdvantageResult,
    ApiToken,
    Grader,
    GradingJob,
    Group,
    ImportJob,
    Jury,
    Membership,
    PatchHighlight,
    Project,
    Rollout,
    RolloutContent,
    RolloutGrade,
    Run,
    Step,
    StepComputation,
    Verdict,
    VerdictCheck,
)
from grading.registry.defined import newest_defined_versions
from grading.rollouts.diffs import patch_digest

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


def ping_database() -> None:
    """One round trip to the database, for /healthz: raises when it does not answer."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def projects_for_user(user) -> list[Project]:
    return list(Project.objects.filter(memberships__user=user).annotate(n_runs=Count("runs", distinct=True)).order_by("name"))


def runs_for_project(project: Project) -> QuerySet[Run]:
    return (
        project.runs.select_related("jury")
        .annotate(
            n_steps=Count("steps", distinct=True),
        )
        .order_by("name")
    )


def run_named(project: Project, name: str) -> Run | None:
    """The project's run of that name; None also for a name no run can have (a NUL, which
    PostgreSQL refuses in text, or longer than a run name may be)."""
    if not params.usable_name(name, max_len=MAX_NAME):
        return None
    return Run.objects.filter(project=project, name=name).first()


def step_numbered(run: Run, number: int) -> Step | None:
    """The run's step of that number; None also for a number past the 32-bit column."""
    return run.steps.filter(number=number).first() if 0 <= number <= MAX_INT else None


def run_list(project: Project) -> list[Run]:
    """The project's runs by name, each with `n_steps`: one query however many runs."""
    return list(runs_for_project(project))


def run_with_step_count(run: Run) -> Run:
    """The run read again with `n_steps`, as run_list gives it."""
    return Run.objects.select_related("jury").annotate(n_steps=Count("steps", distinct=True)).get(pk=run.pk)


def steps_of_run(run: Run, *, number: int | None = None) -> list[Step]:
    """The run's steps in order; only the one numbered `number` when given (none if no such step)."""
    steps = run.steps.order_by("number")
    return list(steps if number is None else steps.filter(number=number))


def group_in_run(project: Project, run: str, uid: str) -> Group | None:
    """The group `uid` of the project's run named `run`, with its run, step and task; None when
    there is none, or none can have those names (a NUL, which PostgreSQL refuses in text)."""
    if not (params.usable_name(run) and params.usable_name(uid, max_len=MAX_UID)):
        return None
    return Group.objects.select_related("run", "step", "task").filter(run__project=project, run__name=run, uid=uid).first()


def group_summaries_page(paginator, request, *, project: Project, run: str | None, step: int | None, mixed: bool | None):
    """One page of the project's groups (`run`, `step`, `mixed`: filters when given), cut
    and read here by `paginator`, a DRF cursor pagination, from `request`'s cursor."""
    groups = Group.objects.filter(run__project=project).select_related("run", "step", "task")
    if run:
        groups = groups.filter(run__name=run) if params.usable_name(run) else groups.none()
    if step is not None:
        groups = groups.filter(step__number=step)
    if mixed is not None:
        groups = groups.filter(is_mixed=mixed)
    return paginator.paginate_queryset(groups, request)


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


GROUP_TOTALS = {
    # Distinct solutions: patch clusters among the passing rollouts of groups with two passes
    # or more (grading.ingest.cluster_storage), and how many such groups and passes there are.
    # First: their filters read the field n_passed, which the "n_passed" total below shadows.
    "n_multi_pass": Count("id", filter=Q(n_passed__gte=2, distinct_solutions__isnull=False)),
    "n_multi_passes": Sum("n_passed", filter=Q(n_passed__gte=2, distinct_solutions__isnull=False), default=0),
    "n_distinct": Sum("distinct_solutions", filter=Q(n_passed__gte=2), default=0),
    # Over every pass, not only those of groups with two or more (which read as "47 passed ·
    # 37 distinct solutions in 45 passes"): a group with one pass has one solution. The
    # passes of groups not clustered yet are left out of both, so the two agree.
    "n_distinct_all": Sum("distinct_solutions", filter=Q(n_passed__gte=1), default=0),
    "n_clustered_passes": Sum("n_passed", filter=Q(distinct_solutions__isnull=False), default=0),
    "n_groups": Count("id"),
    "n_mixed": Count("id", filter=Q(is_mixed=True)),
    "n_rollouts": Sum("n_rollouts", default=0),
    "n_passed": Sum("n_passed", default=0),
}
NO_GROUPS = dict.fromkeys(GROUP_TOTALS, 0)


class RunTotals(TypedDict):
    totals: dict[str, Any]  # its group totals (GROUP_TOTALS), NO_GROUPS without groups


class StepCounts(TypedDict):
    n_groups: int
    n_mixed: int
    n_rollouts: int
    n_passed: int
    n_multi_pass: int
    n_distinct: int
    distinct_per_group: float | None


class RolloutPatch(TypedDict):
    patch_text: str
    patch_ahead: list | None  # its hunks as highlighted ahead (PatchHighlight.hunks), None without
    test_outcomes: Any  # RolloutContent.tests (JSON), {} without content
    response_text: str | None  # a text-only rollout's final response


if TYPE_CHECKING:
    # Model instances with the attributes these selectors set on them.
    RunWithTotals = WithAnnotations[Run, RunTotals]
    StepWithCounts = WithAnnotations[Step, StepCounts]
    RolloutWithPatch = WithAnnotations[Rollout, RolloutPatch]


def distinct_per_group(totals: object) -> float | None:
    """Mean distinct solutions per group with two passes or more, None without such groups."""
    get: Callable[[str], Any] = totals.get if isinstance(totals, dict) else lambda name: getattr(totals, name)
    return get("n_distinct") / get("n_multi_pass") if get("n_multi_pass") else None


def group_totals(groups: QuerySet[Group]) -> dict:
    totals = groups.aggregate(**GROUP_TOTALS)
    totals["distinct_per_group"] = distinct_per_group(totals)
    return totals


def group_totals_by_run(project: Project) -> dict[int, dict]:
    """Run id -> its group totals, for every run of the project in one query."""
    rows = Group.objects.filter(run__project=project).order_by().values("run_id").annotate(**GROUP_TOTALS)
    return {row.pop("run_id"): row for row in rows}


def runs_with_totals(project: Project) -> list[RunWithTotals]:
    """The project's runs by name, each with `n_steps` and its group `totals` (NO_GROUPS for a
    run without groups): two queries however many runs."""
    runs = cast("list[RunWithTotals]", list(runs_for_project(project)))  # `totals` is set below
    totals = group_totals_by_run(project)
    for run in runs:
        run.totals = totals.get(run.pk, NO_GROUPS)
    return runs


def step_totals(step: Step) -> dict:
    """The step's group totals (group_totals)."""
    return group_totals(step.groups.all())


STEPS_PER_PAGE = 50


def steps_page(run: Run, number) -> tuple[Page, list[StepWithCounts]]:
    """Page `number` (as the request gives it) of the run's steps, and its steps with their
    counts (steps_with_counts): a few queries whatever the run's size."""
    page = Paginator(run.steps.order_by("number"), STEPS_PER_PAGE).get_page(number)
    return page, steps_with_counts(list(page.object_list))


def step_for_page(run: Run, number: int) -> Step:
    """The run's step of that number; Http404 when there is none."""
    return get_object_or_404(run.steps, number=number)


def steps_with_counts(steps: list[Step]) -> list[StepWithCounts]:
    """These steps (a page of them) with their group and rollout counts, in one query."""
    multi = Q(groups__n_passed__gte=2, groups__distinct_solutions__isnull=False)
    rows = cast(  # `distinct_per_group` is set below
        "list[StepWithCounts]",
        list(
            Step.objects.filter(pk__in=[s.pk for s in steps])
            .annotate(
                n_groups=Count("groups"),
                n_mixed=Count("groups", filter=Q(groups__is_mixed=True)),
                n_rollouts=Sum("groups__n_rollouts", default=0),
                n_passed=Sum("groups__n_passed", default=0),
                n_multi_pass=Count("groups", filter=multi),
                n_distinct=Sum("groups__distinct_solutions", filter=multi, default=0),
            )
            .order_by("number")
        ),
    )
    for step in rows:
        step.distinct_per_group = distinct_per_group(step)
    return rows


def credit_per_step(run: Run, mapping) -> list[tuple[int, dict]]:
    """(step number, its credit summary) for every step of the run computed under `mapping`:
    the three sums the run page charts, read out of the stored summaries by the database."""
    keys = ("positive_credit_before", "positive_credit_after", "discount_only_positive_credit")
    rows = (
        StepComputation.objects.filter(step__run=run, mapping=mapping)
        .order_by("step__number")
        .values_list("step__number", *(Coalesce(Cast(KT(f"summary__{k}"), FloatField()), 0.0) for k in keys))
    )
    return [(number, dict(zip(keys, sums, strict=True))) for number, *sums in rows]


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


def run_progress(run: Run, mapping) -> dict[str, int]:
    """Groups, mixed groups and graded groups of the whole run (graded: under `mapping`, from
    the stored step summaries), for the run page's next-steps card. Two queries, whatever the
    run's size."""
    counts = Group.objects.filter(run=run).aggregate(n_groups=Count("id"), n_mixed=Count("id", filter=Q(is_mixed=True)))
    computed = StepComputation.objects.filter(step__run=run, mapping=mapping).aggregate(
        n=Coalesce(Sum(Cast(KT("summary__groups__graded"), FloatField())), 0.0),
        stale=Count("id", filter=Q(stale=True)),
    )
    # n_stale: steps whose inputs changed since their stored summary (a verdict, a cheat
    # decision); the chart shows their last figures until the queued recomputation lands.
    return {
        "n_groups": counts["n_groups"],
        "n_mixed": counts["n_mixed"],
        "n_graded": int(computed["n"]),
        "n_stale_steps": computed["stale"],
    }


GROUP_FILTERS = {
    "all": Q(),
    "mixed": Q(is_mixed=True),
    "all-pass": Q(is_mixed=False, n_passed__gt=0),
    "all-fail": Q(is_mixed=False, n_passed=0),
}


STEP_DROPS_LISTED = 200  # dropped rollouts a step page lists one by one; the counts cover them all


def step_drops(step: Step, policy: dict) -> dict:
    """The rollouts the trainer dropped at `step` (docs/method.md §8): per reason the count and
    the mode `policy` gives it, and the first STEP_DROPS_LISTED of them by (uid, index). One
    query when nothing was dropped, two otherwise."""
    counts = dict(
        Rollout.objects.filter(group__step=step)
        .exclude(dropped="")
        .order_by()
        .values_list("dropped")
        .annotate(n=Count("id"))
        .values_list("dropped", "n")
    )
    if not counts:
        return {"total": 0, "reasons": [], "rollouts": [], "more": 0}
    listed = (
        Rollout.objects.filter(group__step=step)
        .exclude(dropped="")
        .order_by("group__uid", "index")
        .values_list("group__uid", "index", "passed", "dropped")[:STEP_DROPS_LISTED]
    )
    total = sum(counts.values())
    return {
        "total": total,
        "reasons": [{"drop": drop_of(reason, policy), "n": n} for reason, n in sorted(counts.items())],
        "rollouts": [
            {"uid": uid, "index": index, "passed": passed, "drop": drop_of(reason, policy)}
            for uid, index, passed, reason in listed
        ],
        "more": max(0, total - STEP_DROPS_LISTED),
    }


def groups_for_step(step: Step, *, show: str = "all") -> QuerySet[Group]:
    return (
        Group.objects.filter(step=step)
        .filter(GROUP_FILTERS.get(show, Q()))
        .select_related("task")
        .only(
            "uid",
            "n_rollouts",
            "n_passed",
            "n_unknown",
            "is_mixed",
            "distinct_solutions",
            "task__instance_id",
            "task__repo",
            "step_id",
            "run_id",
        )
        .order_by("uid")
    )


GROUPS_PER_PAGE = 100


def groups_page(step: Step, *, show: str, number) -> Page:
    """Page `number` (as the request gives it) of the step's groups under the filter `show`,
    read here: its object_list is a list."""
    page = Paginator(groups_for_step(step, show=show), GROUPS_PER_PAGE).get_page(number)
    page.object_list = list(page.object_list)
    return page


def group_for_page(run: Run, uid: str) -> Group:
    return get_object_or_404(Group.objects.select_related("run__project", "step", "task"), run=run, uid=uid)


def rollouts_with_patches(group: Group, *, highlighted_up_to: int = 0) -> list[RolloutWithPatch]:
    """Every rollout of a group with its patch and test outcomes; messages and logs stay deferred.
    `highlighted_up_to`: a patch of at most this many characters comes with its hunks as
    highlighted ahead (`patch_ahead`, PatchHighlight.hunks) where they were made from its
    current text; None otherwise (not highlighted yet, longer, or changed since)."""
    rollouts = cast("list[RolloutWithPatch]", list(group.rollouts.order_by("index")))  # the attributes are set below
    contents_qs = RolloutContent.objects.filter(rollout__group=group).only("rollout_id", "patch", "tests")
    if highlighted_up_to > 0:  # in the same query: the highlight joined only where it may be shown
        short = Q(patch_length__lte=highlighted_up_to)
        contents_qs = contents_qs.annotate(patch_length=Length("patch")).annotate(
            ahead_digest=Case(When(short, then=F("rollout__patch_highlight__digest")), default=None),
            ahead=Case(When(short, then=F("rollout__patch_highlight__hunks")), default=None, output_field=JSONField()),
        )
    contents = {c.rollout_id: c for c in contents_qs}
    for rollout in rollouts:
        content = contents.get(rollout.pk)
        rollout.patch_text = content.patch if content else ""
        rollout.test_outcomes = content.tests if content else {}
        rollout.response_text = None
        ahead = getattr(content, "ahead", None)
        fresh = ahead is not None and getattr(content, "ahead_digest", None) == patch_digest(rollout.patch_text)
        rollout.patch_ahead = ahead if fresh and isinstance(ahead, list) else None
    # Text-only rollouts (a trainer's dump: a prompt and a response, no patch) show their response where a patch would be.
    text_only = {r.pk: r for r in rollouts if not r.patch_text and r.source_format in TEXT_ONLY_FORMATS}
    if text_only:
        for content in RolloutContent.objects.filter(rollout_id__in=list(text_only)).only("rollout_id", "messages"):
            text_only[content.rollout_id].response_text = final_response(content.messages)
    return rollouts


TEXT_ONLY_FORMATS = ("verl",)  # source formats whose rollouts are a response text, not a patch


def final_response(messages) -> str:
    """The last assistant message's text ('' if none)."""
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def patch_highlight(rollout: Rollout, patch: str) -> list | None:
    """The rollout's patch as highlighted ahead (PatchHighlight.hunks) when it was made from
    `patch`, its current text; None otherwise."""
    row = PatchHighlight.objects.filter(rollout=rollout).values_list("digest", "hunks").first()
    if row is None or row[0] != patch_digest(patch) or not isinstance(row[1], list):
        return None
    return row[1]


def rollout_content(group: Group, index: int, *fields: str) -> tuple[Rollout, RolloutContent]:
    rollout = get_object_or_404(Rollout, group=group, index=index)
    content = RolloutContent.objects.only("rollout_id", *fields).filter(rollout=rollout).first() or RolloutContent(
        rollout=rollout
    )
    return rollout, content


def rollout_as_line(rollout: Rollout) -> dict:
    """A stored rollout in its `gagar-group/1` shape (formats.groupline.stored_rollout)."""
    content = getattr(rollout, "content", None)
    return stored_rollout(
        index=rollout.index,
        reward=rollout.reward,
        exit_status=rollout.exit_status,
        stats=rollout.stats,
        source_format=rollout.source_format,
        source_ref=rollout.source_ref,
        patch=content.patch if content else "",
        messages=content.messages if content else [],
        tests=content.tests if content else {},
        test_log=content.test_log if content else "",
        metadata=content.metadata if content else {},
        dropped=rollout.dropped,
    )


def group_as_line(group: Group) -> dict:
    """The stored group in its `gagar-group/1` shape, as it was ingested."""
    task = group.task
    task_out = {"instance_id": task.instance_id}
    for name, key in (
        ("repo", "repo"),
        ("base_commit", "base_commit"),
        ("problem_statement", "problem_statement"),
        ("gold_patch", "gold_patch"),
        ("test_patch", "test_patch"),
        ("fail_to_pass", "FAIL_TO_PASS"),
        ("pass_to_pass", "PASS_TO_PASS"),
    ):
        value = getattr(task, name)
        if value:
            task_out[key] = value
    task_out.update(task.extra or {})
    rollouts = []
    for rollout in group.rollouts.select_related("content").order_by("index"):
        # Exactly the stored fields the content hash covers, so the group posted back is
        # `unchanged`; `passed` (derived from the reward) is read only, ignored on ingest.
        item = rollout_as_line(rollout)
        item["passed"] = rollout.passed
        rollouts.append(item)
    return {
        "format": "gagar-group/1",
        "run": group.run.name,
        "step": group.step.number,
        "uid": group.uid,
        "task": task_out,
        "rollouts": rollouts,
    }


def _shown_from(made: QuerySet, run: Run) -> list[QuerySet]:
    """Where shown_verdict looks, in order, among `made` (verdicts by graders, of `run`'s
    groups): the verdicts the run's method reads, then — a jury still waiting — its members'."""
    read = policy_verdicts(made, run)
    return [read] if run.jury_id is None else [read, made.filter(bench_only=False)]


def shown_verdict(group: Group) -> Verdict | None:
    """The grader's verdict of `group` as people see it (the group page, a reveal, a reviewer's
    disagreement with the grader): the newest the run's method reads (policy_verdicts: its
    jury's when it names one; never a campaign's bench-only verdict), else — a jury still
    waiting — its members' newest; never one a person settled (Verdict.objects.by_graders).
    `group.run` is read (select it with the group). Many groups at once: shown_verdict_ids."""
    made = Verdict.objects.by_graders().filter(group=group)  # ordered newest first
    for where in _shown_from(made, group.run):
        if (verdict := where.first()) is not None:
            return verdict
    return None


def shown_verdict_ids(groups: Iterable[Group]) -> dict[int, int]:
    """shown_verdict's id for each of `groups` that has one (their `run` read: select it with
    them), by group id: one query a run, two on a run whose jury still waits on some."""
    by_run: dict[int, tuple[Run, list[int]]] = {}
    for group in groups:
        by_run.setdefault(group.run_id, (group.run, []))[1].append(group.pk)
    out: dict[int, int] = {}
    for run, ids in by_run.values():
        for where in _shown_from(Verdict.objects.by_graders(), run):
            left = [i for i in ids if i not in out]
            if not left:
                break
            for group_id, verdict_id in (
                where.filter(group_id__in=left).order_by("group_id", "-created_at", "-id").values_list("group_id", "id")
            ):
                out.setdefault(group_id, verdict_id)
    return out


def settled_without_grader(group: Group) -> Verdict | None:
    """The verdict that settled `group` without a model call (settled_by identical-patches,
    grading.verdicts.identical) when it is the newest the run's method reads, else None: what
    the group page says in place of a grader's verdict. `group.run` is read; one query."""
    newest = policy_verdicts(Verdict.objects.on_record().filter(group=group), group.run).first()
    return newest if newest is not None and newest.settled_by == Verdict.SettledBy.IDENTICAL_PATCHES else None


def latest_verdict(group: Group):
    """The group's verdict as people see it (shown_verdict) and its grades by rollout index."""
    verdict = shown_verdict(group)
    if verdict is None:
        return None, {}
    grades = {
        g.rollout.index: g
        for g in RolloutGrade.objects.filter(verdict=verdict)
        .select_related("rollout")
        .only("tier", "rank", "scores", "cheat", "evidence", "rollout__index")
    }
    return verdict, grades


CHECK_FIELDS = ("number", "command", "exit_status", "seconds", "output", "truncated", "killed", "sandbox", "rollout")


def verdict_checks(verdict: Verdict) -> list[VerdictCheck]:
    """The commands `verdict`'s grader ran in its sandbox, in order, with their rollouts' indexes
    (one query; none for a verdict that ran none)."""
    if not verdict.n_checks:
        return []
    return list(
        VerdictCheck.objects.filter(verdict=verdict)
        .select_related("rollout")
        .only(*CHECK_FIELDS, "rollout__index")
        .order_by("number")
    )


def turn_weights_of(group: Group, grades: dict) -> dict[int, list[tuple[int, float, str]]]:
    """Per-token advantages (docs/method.md §9) of a run that gives them: for each graded rollout
    (`grades`, by index), the turns its rows carry a weight below 1 for, with the category the
    verdict cited each for: {index: [(turn, weight, category)]}; [] is uniform. As the trainer's
    rows were last computed under the run's active mapping; {} when the run gives none. Three
    queries (the active mapping takes two)."""
    if not grades or not group.run.turn_weights:
        return {}
    stored = AdvantageResult.objects.filter(
        step_id=group.step_id, uid=group.uid, mapping=active_mapping(group.run), index__in=list(grades)
    ).values_list("index", "turn_weights")
    out = {}
    for index, weights in stored:
        cited = cited_turns(grades[index].evidence, rollout=index, n_messages=10**9)
        out[index] = sorted((int(turn), float(weight), cited.get(int(turn), "")) for turn, weight in (weights or {}).items())
    return out


# --- the team page (grading/views/team.py) -----------------------------------------------


def team_members(project: Project) -> list[Membership]:
    """The project's members with their accounts and live token counts, admins first (one query)."""
    return list(
        Membership.objects.filter(project=project)
        .select_related("user__service_account")
        .annotate(
            n_tokens=Count(
                "user__api_tokens", filter=Q(user__api_tokens__project=project, user__api_tokens__revoked_at__isnull=True)
            )
        )
        .order_by("user__username")
    )


def team_tokens(project: Project) -> list[ApiToken]:
    """The project's API tokens, live ones first, newest first, with their account and its role
    in the project (empty once the account left it: the token then opens nothing) (one query)."""
    return list(
        ApiToken.objects.filter(project=project)
        .select_related("user")
        .annotate(role=Subquery(Membership.objects.filter(project=project, user=OuterRef("user")).values("role")[:1]))
        .order_by(F("revoked_at").desc(nulls_first=True), "-created_at")
    )


def cluster_members(rollouts: Iterable[Rollout]) -> dict[int, list[int]]:
    """A group's patch clusters from its rollouts' stored fields: cluster number (its first
    member's index) -> member indices, ascending. Each rollout's label ("same change as #3,
    +2 extra files") is `rollout.cluster_label`; rollouts not yet clustered are left out."""
    clusters: dict[int, list[int]] = {}
    for rollout in sorted(rollouts, key=lambda r: r.index):
        if rollout.cluster is not None:
            clusters.setdefault(rollout.cluster, []).append(rollout.index)
    return clusters


# --- the grading page of a step (grading/views/grading.py) --------------------------------


def grading_jobs(step: Step) -> list[GradingJob]:
    """The step's grading jobs with their group and verdict, by grader and group uid (one query)."""
    return list(GradingJob.objects.filter(group__step=step).select_related("group", "verdict").order_by("grader", "group__uid"))


def grading_job_counts(step: Step) -> dict[str, int]:
    """How many of the step's grading jobs are queued, running, done and failed (one query)."""
    return GradingJob.objects.filter(group__step=step).aggregate(
        queued=Count("id", filter=Q(status=GradingJob.Status.QUEUED)),
        running=Count("id", filter=Q(status=GradingJob.Status.RUNNING)),
        done=Count("id", filter=Q(status=GradingJob.Status.DONE)),
        failed=Count("id", filter=Q(status=GradingJob.Status.FAILED)),
    )


@dataclass(frozen=True)
class PolicyChoice:
    value: str  # as the run policy form posts it: a built-in's value, or "<name>@<version>"
    label: str
    selected: bool


def policy_graders(run: Run) -> list[PolicyChoice]:
    """The auto-graders the run's policy form offers: the built-ins, each of the project's
    defined LLM graders at its newest version, and the run's own if it pins an older one
    (one query)."""
    choices = [PolicyChoice(value, str(label), run.auto_grade == value) for value, label in Run.AutoGrade.choices]
    offered = {c.value for c in choices}
    for version in newest_defined_versions(run.project_id):
        label = f"{version.name}: {version.model}" + (f" ({version.grader.description})" if version.grader.description else "")
        choices.append(PolicyChoice(version.name, label[:200], run.auto_grade == version.name))
        offered.add(version.name)
    if run.auto_grade not in offered:
        choices.append(PolicyChoice(run.auto_grade, f"{run.auto_grade} (an older version)", True))
    return choices


def policy_juries(run: Run) -> list[PolicyChoice]:
    """The juries the run's policy form offers: each of the project's juries at its current
    version, and the run's own if it uses an older one (one query)."""
    current = run.jury
    choices: list[PolicyChoice] = []
    seen: set[str] = set()
    for jury in Jury.objects.filter(project_id=run.project_id).order_by("name", "-version"):
        is_current = jury.name not in seen
        seen.add(jury.name)
        if not is_current and (current is None or jury.pk != current.pk):
            continue
        rule = jury.get_rule_display()
        if jury.rule == Jury.Rule.AGREE_OR_ABSTAIN:
            rule += f" (gap {jury.max_gap}, then {jury.get_on_abstain_display()})"
        label = f"{jury.grader}: {rule} of {', '.join(jury.members)}" + ("" if is_current else " (an older version)")
        choices.append(PolicyChoice(f"{jury.name}@{jury.version}", label, current is not None and jury.pk == current.pk))
    return choices


def project_graders(project: Project) -> list[Grader]:
    """The project's graders, each with its versions in order: two queries."""
    return list(Grader.objects.filter(project=project).prefetch_related("versions").order_by("name"))
