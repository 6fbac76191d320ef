"""A project's graders and their versions (grading.registry.versions, grading.registry.defined).

GET  /api/v1/graders/?project=P    every grader with every version: the built-ins as they
                                   graded here, external graders as they posted, and the
                                   project's defined LLM graders
POST /api/v1/graders/?project=P    {"name", "model", "endpoint_env", "api_key_env",
                                    "budgets": {"max_turns", "max_tokens",
                                    "request_timeout_s"}, "description"}: define or change
                                   an LLM grader (admin); a new configuration is a new
                                   version (201), the same one again is the version it is (200)
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
from grading.models import Capability, GraderVersion
from grading.registry.defined import DefinitionError, define_grader
from grading.selectors.graders import project_graders

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")


def version_dict(version: GraderVersion) -> dict:
    return {
        "grader": version.name,
        "version": version.version,
        "model": version.model,
        "endpoint_env": version.endpoint_env,
        "api_key_env": version.api_key_env,
        "prompt_version": version.prompt_version,
        "guide_version": version.guide_version,
        "tools": version.tools,
        "budgets": version.budgets,
        "tool_mode": version.config.get("tool_mode", "tools"),
        "request": version.config.get("request") or {},
        "created_at": version.created_at.isoformat(),
    }


class GraderListCreateView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(parameters=[PROJECT], responses=OpenApiTypes.OBJECT, summary="The project's graders, every version")
    def get(self, request):
        project = project_for_request(request, Capability.VIEW, Capability.EXPORT)
        return Response(
            [
                {
                    "name": g.name,
                    "backend": g.backend,
                    "defined": g.is_defined,
                    "description": g.description,
                    "versions": [version_dict(v) for v in g.versions.all()],
                }
                for g in project_graders(project)
            ]
        )

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
        summary="Define or change an LLM grader (admin)",
    )
    def post(self, request):
        project = project_for_request(request, Capability.MANAGE)
        try:
            version, created = define_grader(
                project=project, data=request.data, user=request.user if request.user.is_authenticated else None
            )
        except DefinitionError as exc:
            return error(status.HTTP_400_BAD_REQUEST, str(exc), field=exc.field)
        return Response(version_dict(version), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
