"""A project's health thresholds: what raises its runs' warnings (grading.health.warnings.Thresholds).

GET /api/v1/health-thresholds/?project=P   {"thresholds": {name: value}, "defaults": {name: value},
                                            "changed": [names], "updated_by", "updated_at"} (any role)
PUT /api/v1/health-thresholds/?project=P   {"thresholds": {"window": 12, ...}}: replace them (admin);
                                            a threshold left out takes its default, {} resets them all;
                                            400 names the refused field ("thresholds.window") and lists every one
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.parsers import StrictJSONParser
from grading.api.scoping import project_for_request
from grading.health.services import set_health_thresholds
from grading.health.warnings import Thresholds, ThresholdsRefused
from grading.models import Capability, Project
from grading.selectors.projects import health_thresholds

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")


def _answer(project: Project) -> Response:
    current = health_thresholds(project)
    return Response(
        {
            "thresholds": current.thresholds.as_dict(),
            "defaults": Thresholds().as_dict(),
            "changed": sorted(current.changed),
            "updated_by": current.updated_by,
            "updated_at": current.updated_at.isoformat() if current.updated_at else None,
        }
    )


class HealthThresholdsView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(parameters=[PROJECT], responses=OpenApiTypes.OBJECT, summary="What raises a run's health warnings")
    def get(self, request):
        return _answer(project_for_request(request, Capability.VIEW, Capability.EXPORT))

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
        summary="Set what raises a run's health warnings (admin)",
    )
    def put(self, request):
        project = project_for_request(request, Capability.MANAGE)
        body = request.data
        if not isinstance(body, dict) or set(body) != {"thresholds"} or not isinstance(body["thresholds"], dict):
            return error(status.HTTP_400_BAD_REQUEST, 'the body is {"thresholds": {name: number}}', field="thresholds")
        try:
            set_health_thresholds(project=project, user=request.user, values=body["thresholds"])
        except ThresholdsRefused as exc:
            errors = {f"thresholds.{name}": f"{name} {message}" for name, message in exc.errors.items()}
            return error(status.HTTP_400_BAD_REQUEST, str(exc), field=f"thresholds.{exc.field}", errors=errors)
        return _answer(project)
