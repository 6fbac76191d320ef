"""Start a campaign from the desk (API or page): the scope as the request gives it, the
judged groups named here (reviews.selectors.campaigns) and passed down to the grading
service, which never reads reviews."""

from __future__ import annotations

from grading.jobs.campaigns import CampaignError, parse_scope, start_campaign
from grading.models import Campaign, Project
from reviews.selectors.campaigns import judged_group_ids

FIELDS = ("grader", "scope")


def start(*, project: Project, body: object, user=None) -> Campaign:
    """A campaign of `body["grader"]` on `body["scope"]`; CampaignError naming the field."""
    if not isinstance(body, dict):
        raise CampaignError("body", 'the body must be a JSON object: {"grader": ..., "scope": {...}}')
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise CampaignError(unknown[0][:40], f"unknown field {unknown[0][:40]!r}; a campaign takes {', '.join(FIELDS)}")
    if "grader" not in body:
        raise CampaignError("grader", "grader is required")
    scope = parse_scope(project, body.get("scope"))
    judged = judged_group_ids(project, scope.run) if scope.kind == Campaign.Scope.JUDGED else None
    return start_campaign(project=project, grader=body["grader"], scope=scope, judged=judged, user=user)
