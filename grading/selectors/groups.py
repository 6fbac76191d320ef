"""Groups: one by its uid, the API's pages of a project's groups, a step's groups under a filter."""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import Exists, F, Max, OuterRef, Q, QuerySet
from django.shortcuts import get_object_or_404

from grading.formats import params
from grading.formats.groupline import MAX_UID
from grading.models import CheatDecision, Group, Project, Run, Step


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


GROUP_FILTERS = {
    "all": Q(),
    "mixed": Q(is_mixed=True),
    "all-pass": Q(is_mixed=False, n_passed__gt=0),
    "all-fail": Q(is_mixed=False, n_passed=0),
    # a rollout of the group confirmed as a cheat in the audit
    "cheats": Q(Exists(CheatDecision.objects.filter(rollout__group=OuterRef("pk"), confirmed=True))),
}
# How a step's groups are listed (the run's timeline opens a step in the order its point is about).
GROUP_ORDERS = {
    "uid": "by uid",
    "credit": "most credit moved first",
    "longest": "longest trajectory first",
}


def groups_for_step(step: Step, *, show: str = "all", order: str = "uid") -> QuerySet[Group]:
    groups = Group.objects.filter(step=step).filter(GROUP_FILTERS.get(show, Q()))
    if order == "credit":
        groups = groups.order_by("-credit_moved", "uid")
    elif order == "longest":
        groups = groups.annotate(longest=Max("rollouts__tokens")).order_by(F("longest").desc(nulls_last=True), "uid")
    else:
        groups = groups.order_by("uid")
    return groups.select_related("task").only(
        "uid",
        "n_rollouts",
        "n_passed",
        "n_unknown",
        "is_mixed",
        "in_comparison",
        "distinct_solutions",
        "task__instance_id",
        "task__repo",
        "step_id",
        "run_id",
        "credit_moved",
    )


GROUPS_PER_PAGE = 100


def groups_page(step: Step, *, show: str, number, order: str = "uid") -> Page:
    """Page `number` (as the request gives it) of the step's groups under the filter `show`, in
    the order `order` (GROUP_ORDERS), read here: its object_list is a list."""
    page = Paginator(groups_for_step(step, show=show, order=order), GROUPS_PER_PAGE).get_page(number)
    page.object_list = list(page.object_list)
    return page


def group_for_page(run: Run, uid: str) -> Group:
    return get_object_or_404(Group.objects.select_related("run__project", "step", "task"), run=run, uid=uid)
