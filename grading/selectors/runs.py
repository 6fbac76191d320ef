"""A project's runs: by name, listed with their step counts and group totals, and what the run page charts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.db.models import Count, FloatField, Q, QuerySet, Sum
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce

from grading.formats import params
from grading.formats.groupline import MAX_NAME
from grading.models import Comparison, Group, Project, Run, StepComputation
from grading.selectors.totals import NO_GROUPS, group_totals_by_run

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


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


def run_list(project: Project) -> list[Run]:
    """The project's runs by name, each with `n_steps`: one query however many runs."""
    return list(runs_for_project(project))


def comparison_of(run: Run) -> str | None:
    """The name of the blind comparison whose cross-run groups `run` holds, if it holds any."""
    return Comparison.objects.filter(run=run).values_list("name", flat=True).first()


def run_with_step_count(run: Run) -> Run:
    """The run read again with `n_steps`, as run_list gives it."""
    return Run.objects.select_related("jury").annotate(n_steps=Count("steps", distinct=True)).get(pk=run.pk)


class RunTotals(TypedDict):
    totals: dict[str, Any]  # its group totals (GROUP_TOTALS), NO_GROUPS without groups


if TYPE_CHECKING:
    # A Run with the attributes runs_with_totals sets on it.
    RunWithTotals = WithAnnotations[Run, RunTotals]


def runs_with_totals(project: Project) -> list[RunWithTotals]:
    """The project's runs by name, each with `n_steps` and its group `totals` (NO_GROUPS for a
    run without groups): two queries however many runs."""
    runs = cast("list[RunWithTotals]", list(runs_for_project(project)))  # `totals` is set below
    totals = group_totals_by_run(project)
    for run in runs:
        run.totals = totals.get(run.pk, NO_GROUPS)
    return runs


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
