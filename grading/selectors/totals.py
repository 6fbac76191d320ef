"""A run's or a step's groups added up: groups, mixed groups, rollouts, passes and distinct solutions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from grading.models import Group, Project

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
