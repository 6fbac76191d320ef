"""Blind comparisons between two runs or checkpoints (grading.comparisons; docs/api.md and
docs/user-guide.md, "Blind comparisons between two runs or checkpoints").

POST /api/v1/comparisons/?project=P                 {"name", "a": {"run", "steps": [first, last] | "step"},
                                                     "b": {...}, "per_side"?: 4, "max_tasks"?: 100,
                                                     "seed"?: 0, "grader"?: a grader to queue}: 201
GET  /api/v1/comparisons/?project=P                 the project's comparisons, newest first
GET  /api/v1/comparisons/{name}/?project=P&judge=J  one: its sides, counts and figures with 95 %
                                                     bootstrap intervals, as people (judge=people,
                                                     the default) or a grader judged it
GET  /api/v1/comparisons/{name}/dataset/?project=P  its judgments as JSON Lines, one group a line

Creating one is an admin's (MANAGE); reading one asks VIEW, and the dataset EXPORT. A person who
judges, or may still be served, one of its groups blind gets 403 on its figures and dataset until
they have judged it (reviews.selectors.comparisons.withheld_from). A refused body is a 400 (a run
that is not there a 404, a name in use a 409, nothing both sides solved a 422) naming the `field`.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.urls import reverse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.advantages import FileExportNegotiation
from grading.api.errors import error
from grading.api.parsers import StrictJSONParser
from grading.api.scoping import project_for_request
from grading.comparisons.services import ComparisonError, create_comparison
from grading.formats import params
from grading.models import Capability, Comparison, Project
from reviews.selectors import comparisons as data

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")
JUDGE = OpenApiParameter("judge", str, description="people (the default) or a grader's name (see `judges`)")
WITHHELD = "you judge, or may still be served, groups of this comparison blind: its figures open once you have judged them"


def as_dict(comparison: Comparison, *, sides: bool = True) -> dict:
    """A comparison as the API gives it; without its sides' names for a person it is withheld from."""
    out = {
        "name": comparison.name,
        "url": reverse("api-comparison", args=[comparison.name]) + f"?project={comparison.project.name}",
        "run": comparison.run.name,
        "per_side": comparison.per_side,
        "max_tasks": comparison.max_tasks,
        "seed": comparison.seed,
        "tasks_solved_by_both": comparison.n_solved_both,
        "created_at": comparison.created_at.isoformat(),
    }
    if sides:
        out["sides"] = {
            "a": {"label": comparison.label_a, "steps": comparison.steps_a},
            "b": {"label": comparison.label_b, "steps": comparison.steps_b},
        }
    return out


def _comparison(project: Project, name: str) -> Comparison:
    comparison = data.comparison_in(project, name) if params.usable_name(name, max_len=100) else None
    if comparison is None:
        raise NotFound(f"no comparison {name[:100]!r} in {project.name}")
    return comparison


def _readable(request, name: str, capability: Capability) -> Comparison:
    project = project_for_request(request, capability)
    comparison = _comparison(project, name)
    if data.withheld_from(comparison, request.user):
        raise PermissionDenied(WITHHELD)
    return comparison


class ComparisonListCreateView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        parameters=[PROJECT],
        responses=OpenApiTypes.OBJECT,
        operation_id="v1_comparisons_list",
        summary="The project's blind comparisons, newest first",
    )
    def get(self, request):
        project = project_for_request(request, Capability.VIEW)
        listed = data.comparison_list(project)
        withheld = data.withheld_runs(project, request.user)
        return Response([as_dict(c, sides=c.run_id not in withheld) for c in listed])

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses={
            201: OpenApiResponse(OpenApiTypes.OBJECT, description="the comparison, its groups stored"),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description="a refused field, named in `field`"),
            404: OpenApiResponse(OpenApiTypes.OBJECT, description="no such run (`field` a.run or b.run)"),
            409: OpenApiResponse(OpenApiTypes.OBJECT, description="the name is taken by a run of the project"),
            422: OpenApiResponse(OpenApiTypes.OBJECT, description="no task solved by both sides"),
        },
        summary="Build a blind comparison between two runs or checkpoints (admin)",
    )
    def post(self, request):
        project = project_for_request(request, Capability.MANAGE)
        try:
            comparison = create_comparison(project=project, body=request.data, user=request.user)
        except ComparisonError as exc:
            return error(exc.status, str(exc), field=exc.field)
        body = as_dict(comparison)
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["url"]})


class ComparisonDetailView(APIView):
    @extend_schema(
        parameters=[PROJECT, JUDGE],
        responses=OpenApiTypes.OBJECT,
        summary="A blind comparison's figures, with 95 % bootstrap intervals over groups",
    )
    def get(self, request, name: str):
        comparison = _readable(request, name, Capability.VIEW)
        judge = request.query_params.get("judge") or data.PEOPLE
        judges = data.judges(comparison)
        if judge not in judges:
            return error(status.HTTP_400_BAD_REQUEST, f"judge must be one of {', '.join(judges)}"[:1000], field="judge")
        return Response({**as_dict(comparison), **data.report(comparison, judge, offered=judges).as_dict()})


class ComparisonDatasetView(APIView):
    content_negotiation_class = FileExportNegotiation

    @extend_schema(
        parameters=[PROJECT],
        responses={(200, data.CONTENT_TYPE): OpenApiTypes.STR},
        summary="A blind comparison's groups and every judgment of them, with sides and sources, as JSON Lines",
    )
    def get(self, request, name: str):
        comparison = _readable(request, name, Capability.EXPORT)
        response = StreamingHttpResponse(data.dataset_lines(comparison), content_type=data.CONTENT_TYPE)
        response["Content-Disposition"] = str(content_disposition_header(as_attachment=True, filename=f"{comparison.name}.jsonl"))
        return response
