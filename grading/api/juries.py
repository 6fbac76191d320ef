"""A project's juries (grading.verdicts.deliberation).

GET  /api/v1/juries/?project=P     every version of every jury, newest first per name
POST /api/v1/juries/?project=P     {"name", "members": ["heuristic@1", ...], "rule",
                                    "max_gap", "on_abstain"}: define or edit (admin); a
                                    changed definition is a new version (201), the same one
                                    again returns the current version (200)
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
from grading.models import Capability, Jury
from grading.registry.juries import JuryError, jury_list, save_jury

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")
FIELDS = ("name", "members", "rule", "max_gap", "on_abstain")


def as_dict(jury: Jury) -> dict:
    return {
        "grader": jury.grader,
        "name": jury.name,
        "version": jury.version,
        "members": jury.members,
        "rule": jury.rule,
        "max_gap": jury.max_gap,
        "on_abstain": jury.on_abstain,
        "created_at": jury.created_at.isoformat(),
    }


class JuryListCreateView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(parameters=[PROJECT], responses=OpenApiTypes.OBJECT, summary="The project's juries, every version")
    def get(self, request):
        project = project_for_request(request, Capability.VIEW, Capability.EXPORT)
        return Response([as_dict(j) for j in jury_list(project)])

    @extend_schema(
        parameters=[PROJECT], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT, summary="Define or edit a jury (admin)"
    )
    def post(self, request):
        project = project_for_request(request, Capability.MANAGE)
        body = request.data
        if not isinstance(body, dict):
            return error(status.HTTP_400_BAD_REQUEST, "the body must be a JSON object")
        unknown = sorted(set(body) - set(FIELDS))
        if unknown:
            return error(status.HTTP_400_BAD_REQUEST, f"unknown field {unknown[0]!r}", field=unknown[0])
        try:
            jury, created = save_jury(project=project, **{k: body[k] for k in FIELDS if k in body})
        except (JuryError, TypeError) as exc:
            return error(status.HTTP_400_BAD_REQUEST, str(exc), field=getattr(exc, "field", "name"))
        return Response(as_dict(jury), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
