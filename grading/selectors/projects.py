"""Projects, their members and their API tokens: the project list and the team page (grading/views/team.py);
a project's health thresholds (grading/views/thresholds.py, grading/api/health.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db.models import Count, F, OuterRef, Q, Subquery

from grading.health.warnings import Thresholds
from grading.models import ApiToken, Membership, Project


def projects_for_user(user) -> list[Project]:
    return list(Project.objects.filter(memberships__user=user).annotate(n_runs=Count("runs", distinct=True)).order_by("name"))


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


@dataclass(frozen=True)
class HealthThresholds:
    thresholds: Thresholds  # what the project's runs are warned under
    changed: dict[str, float]  # those that differ from the defaults
    updated_by: str | None  # who last changed them (None: nobody yet, or an account since deleted)
    updated_at: datetime | None


def health_thresholds(project: Project) -> HealthThresholds:
    """The project's health thresholds and who last changed them. One query once someone has
    (the name of who did), none before."""
    thresholds = Thresholds.from_dict(project.health_thresholds)
    user_id = project.health_thresholds_updated_by_id
    name = get_user_model().objects.filter(pk=user_id).values_list("username", flat=True).first() if user_id is not None else None
    return HealthThresholds(thresholds, thresholds.overrides(), name, project.health_thresholds_updated_at)
