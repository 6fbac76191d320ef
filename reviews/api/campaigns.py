"""Campaigns: run a built-in grader on a scope of groups in the background (grading.jobs.campaigns).

POST /api/v1/campaigns/?project=P               {"grader": "heuristic" | "llm" | a version
                                                 name, "scope": {"run", "step"} | {"run"} |
                                                 {"judged": true, "run"?}}: 202 with the campaign
GET  /api/v1/campaigns/?project=P               newest first, 50 a page (`before` pages on)
GET  /api/v1/campaigns/{id}/?project=P          one, with its progress
POST /api/v1/campaigns/{id}/cancel/?project=P   stop it before its next group (409 once ended)

Project admins only (their session or an admin's token). A refused body is a 400 (a run or
step that is not there a 404) naming the `field`.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.parsers import StrictJSONParser
from grading.api.scoping import project_for_request
from grading.formats import params
from grading.jobs.campaigns import CampaignError, cancel_campaign
from grading.models import Campaign, Capability, Project
from reviews.selectors import campaigns as data
from reviews.services.campaigns import start

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")


def as_dict(campaign: Campaign) -> dict:
    """A campaign as the API and its docs (docs/api.md) give it: counts and costs, no verdicts."""
    return {
        "id": campaign.pk,
        "url": reverse("api-campaign", args=[campaign.pk]),
        "grader": campaign.grader,
        "backend": campaign.backend,
        "scope": {
            "kind": campaign.scope,
            "run": campaign.run.name if campaign.run else None,
            "step": campaign.step_number,
        },
        "status": campaign.status,
        "counts": {
            "total": campaign.total,
            "graded": campaign.graded,
            "skipped_existing": campaign.skipped_existing,
            "failed": campaign.failed,
            "pending": campaign.total - campaign.done,
        },
        "progress": {"done": campaign.done, "total": campaign.total, "percent": campaign.percent},
        "tokens": {"prompt": campaign.prompt_tokens, "completion": campaign.completion_tokens},
        "cost_usd": campaign.cost_usd,
        "latency_s": {
            "sum": round(campaign.latency_sum_s, 3),
            "mean": None if campaign.latency_mean_s is None else round(campaign.latency_mean_s, 3),
            "p50": campaign.latency_p50_s,
            "max": campaign.latency_max_s,
        },
        "error": campaign.error,
        "created_by": campaign.created_by.username if campaign.created_by else None,
        "created_at": campaign.created_at.isoformat(),
        "started_at": campaign.started_at.isoformat() if campaign.started_at else None,
        "finished_at": campaign.finished_at.isoformat() if campaign.finished_at else None,
    }


def _campaign(project: Project, pk: int) -> Campaign:
    campaign = data.campaign_in(project, pk)
    if campaign is None:
        raise NotFound(f"no campaign {pk} in {project.name}")
    return campaign


class CampaignListCreateView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        parameters=[PROJECT, OpenApiParameter("before", int, description="only campaigns with a smaller id: the next page")],
        responses=OpenApiTypes.OBJECT,
        operation_id="v1_campaigns_list",
        summary=f"The project's campaigns, newest first, {data.PAGE} a page (admin)",
    )
    def get(self, request):
        project = project_for_request(request, Capability.MANAGE)
        before = params.optional_whole(request.query_params.get("before"), "before", maximum=params.MAX_ID)
        page = data.campaign_list(project, before=before, limit=data.PAGE + 1)
        response = Response([as_dict(c) for c in page[: data.PAGE]])
        if len(page) > data.PAGE:
            query = urlencode({**request.query_params.dict(), "before": page[data.PAGE - 1].pk})
            response["Link"] = f'<{request.build_absolute_uri(reverse("api-campaigns"))}?{query}>; rel="next"'
        return response

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses={
            202: OpenApiResponse(OpenApiTypes.OBJECT, description="the campaign, queued (or done: nothing to grade)"),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="a refused field, named in `field`"),
            404: OpenApiResponse(OpenApiTypes.OBJECT, description="no such run or step (`field` scope.run or scope.step)"),
        },
        summary="Run a built-in grader on a step, a run or the judged groups, as a background job (admin)",
    )
    def post(self, request):
        project = project_for_request(request, Capability.MANAGE)
        try:
            campaign = start(project=project, body=request.data, user=request.user)
        except CampaignError as exc:
            return error(exc.status, str(exc), field=exc.field)
        body = as_dict(_campaign(project, campaign.pk))  # read again: with eager Celery it has run already
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


class CampaignDetailView(APIView):
    @extend_schema(parameters=[PROJECT], responses=OpenApiTypes.OBJECT, summary="One campaign and its progress (admin)")
    def get(self, request, pk: int):
        project = project_for_request(request, Capability.MANAGE)
        return Response(as_dict(_campaign(project, pk)))


class CampaignCancelView(APIView):
    @extend_schema(
        parameters=[PROJECT],
        request=None,
        responses={200: OpenApiTypes.OBJECT, 409: OpenApiResponse(OpenApiTypes.OBJECT, description="it had ended")},
        summary="Cancel a queued or running campaign before its next group (admin)",
    )
    def post(self, request, pk: int):
        project = project_for_request(request, Capability.MANAGE)
        campaign = _campaign(project, pk)
        if not cancel_campaign(campaign):
            return error(status.HTTP_409_CONFLICT, f"campaign {pk} has ended ({campaign.status})", field="status")
        return Response(as_dict(_campaign(project, pk)))
