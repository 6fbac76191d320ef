"""How far the review of a project has come: this person's assignments, the team's, the project's totals."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from grading.models import Capability, Group, Membership, Project
from reviews.models import Assignment, GroupReview, Judgment
from reviews.selectors.adjudication import adjudication_aggregates


def my_progress(*, project: Project, reviewer) -> dict:
    counts = dict(
        Assignment.objects.filter(group__run__project=project, reviewer=reviewer)
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    return {s: counts.get(s, 0) for s in Assignment.Status.values}


def my_assignments(*, project: Project, reviewer, limit: int = 20) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(group__run__project=project, reviewer=reviewer)
        .select_related("group__run", "group__step", "group__task")
        .order_by("-created_at")[:limit]
    )


def team_progress(project: Project) -> list[dict]:
    """Per reviewer: open, submitted, skipped assignments and blind share of their judgments."""
    members = Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    per_user = {
        row["reviewer"]: row
        for row in Assignment.objects.filter(group__run__project=project)
        .values("reviewer")
        .annotate(
            open=Count("pk", filter=Q(status=Assignment.Status.OPEN)),
            submitted=Count("pk", filter=Q(status=Assignment.Status.SUBMITTED)),
            skipped=Count("pk", filter=Q(status=Assignment.Status.SKIPPED)),
        )
    }
    blind = dict(
        Judgment.objects.filter(group__run__project=project, kind=Judgment.Kind.REVIEW, blind=True)
        .values_list("reviewer")
        .annotate(n=Count("pk"))
        .values_list("reviewer", "n")
    )
    rows = []
    for m in members:
        if Capability.REVIEW not in m.capabilities:
            continue
        row = per_user.get(m.user_id, {})
        rows.append(
            {
                "user": m.user,
                "role": m.role,
                "open": row.get("open", 0),
                "submitted": row.get("submitted", 0),
                "skipped": row.get("skipped", 0),
                "blind": blind.get(m.user_id, 0),
            }
        )
    return rows


def project_review_totals(project: Project) -> dict:
    mixed = Group.objects.filter(run__project=project, to_judge=True)
    reviewed = GroupReview.objects.filter(group__run__project=project)
    return {
        "mixed": mixed.count(),
        **reviewed.aggregate(
            judged=Count("pk", filter=Q(n_reviews__gte=1)),
            two_reviewers=Count("pk", filter=Q(n_reviews__gte=2)),
            **adjudication_aggregates(),
        ),
    }
