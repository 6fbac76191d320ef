"""A run's steps: by number, a page of them with their counts, a step's totals and the rollouts it dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict, cast

from django.core.paginator import Page, Paginator
from django.db.models import Count, Q, Sum
from django.shortcuts import get_object_or_404

from grading.formats.groupline import MAX_INT
from grading.method.partial import drop_of
from grading.models import Rollout, Run, Step
from grading.selectors.totals import distinct_per_group, group_totals

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


def step_numbered(run: Run, number: int) -> Step | None:
    """The run's step of that number; None also for a number past the 32-bit column."""
    return run.steps.filter(number=number).first() if 0 <= number <= MAX_INT else None


def steps_of_run(run: Run, *, number: int | None = None) -> list[Step]:
    """The run's steps in order; only the one numbered `number` when given (none if no such step)."""
    steps = run.steps.order_by("number")
    return list(steps if number is None else steps.filter(number=number))


class StepCounts(TypedDict):
    n_groups: int
    n_mixed: int
    n_rollouts: int
    n_passed: int
    n_multi_pass: int
    n_distinct: int
    distinct_per_group: float | None


if TYPE_CHECKING:
    # A Step with the attributes steps_with_counts sets on it.
    StepWithCounts = WithAnnotations[Step, StepCounts]


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
