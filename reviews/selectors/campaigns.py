"""Reads for campaigns (grading.jobs.campaigns): a project's campaigns, one of them, and the
groups people judged, which a judged scope grades (grading never reads reviews, so the
desk names them). A campaign's figures are counts, tokens, cost and latency: no tier, rank
or evidence of any verdict."""

from __future__ import annotations

from django.db.models import QuerySet

from grading.models import Campaign, Project, Run
from grading.registry.backends import BACKENDS, GraderUnavailable, grader_name
from reviews.models import Judgment

PAGE = 50


def judged_group_ids(project: Project, run: Run | None = None) -> QuerySet:
    """Ids of the project's groups (of `run`, if given) with at least one person's judgment
    (a review or an adjudication), as a subquery."""
    judgments = Judgment.objects.filter(group__run__project=project)
    if run is not None:
        judgments = judgments.filter(group__run=run)
    return judgments.values("group_id")


def campaign_list(project: Project, *, before: int | None = None, limit: int = PAGE) -> list[Campaign]:
    """The project's campaigns, newest first (those with an id below `before`): one query."""
    campaigns = Campaign.objects.filter(project=project).select_related("run", "created_by").order_by("-pk")
    if before is not None:
        campaigns = campaigns.filter(pk__lt=before)
    return list(campaigns[:limit])


def campaign_in(project: Project, pk: int) -> Campaign | None:
    return Campaign.objects.filter(project=project, pk=pk).select_related("run", "created_by").first()


def offered_graders(project: Project) -> list[tuple[str, str, str]]:
    """(backend, its current version's name, why it cannot run here or "") for the page's form."""
    offered = []
    for backend in BACKENDS:
        try:
            offered.append((backend, grader_name(backend, project.pk), ""))
        except GraderUnavailable as exc:
            offered.append((backend, "", str(exc)))
    return offered


def project_runs(project: Project) -> list[Run]:
    return list(Run.objects.filter(project=project).order_by("name"))
