"""The adjudication queue: the groups whose reviewers disagree, and those an adjudicator settled."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from grading.models import Project
from reviews.models import GroupReview


def adjudication_queue(project: Project, *, include_done: bool = False) -> QuerySet:
    """The group ids waiting for an adjudicator (and, with `include_done`, those settled), by
    step and uid; a page of them is read by `adjudication_rows`. Ids first, rows second: a
    run's reviewed groups can nearly all be waiting, and sorting them with their
    disagreements and tasks attached was most of the page at 20,000 judgments
    (benchmarks/scale.py)."""
    reviews = GroupReview.objects.filter(group__run__project=project)
    reviews = (
        reviews.filter(Q(needs_adjudication=True) | Q(adjudicated=True))
        if include_done
        else reviews.filter(needs_adjudication=True)
    )
    return reviews.order_by("group__step_number", "group__uid").values_list("group_id", flat=True)


def adjudication_rows(group_ids: list[int]) -> list[GroupReview]:
    """The queue's rows for these groups, in the order given, with what the queue shows."""
    rows = {
        r.group_id: r
        for r in GroupReview.objects.filter(group_id__in=group_ids)
        .select_related("group__run", "group__task")
        .only(
            "group_id",
            "n_reviews",
            "needs_adjudication",
            "adjudicated",
            "disagreement",
            "group__uid",
            "group__step_number",
            "group__run__name",
            "group__task__instance_id",
        )
    }
    return [rows[g] for g in group_ids if g in rows]


def adjudication_aggregates() -> dict[str, Count]:
    return {
        "needs_adjudication": Count("pk", filter=Q(needs_adjudication=True)),
        "adjudicated": Count("pk", filter=Q(adjudicated=True)),
    }


def adjudication_counts(project: Project) -> dict[str, int]:
    """How many groups wait for an adjudicator and how many are settled, in one aggregate (the
    two are disjoint: a settled group no longer waits)."""
    return GroupReview.objects.filter(group__run__project=project).aggregate(**adjudication_aggregates())
