"""The benchmarks whose images hold history past the base commit (grading.registry.future_history).

GET /api/v1/scanners/future-history/?project=P    {"prefixes": [...]} (any role)
PUT /api/v1/scanners/future-history/?project=P    {"prefixes": ["commit0__", ...]}: replace them
                                                  (admin); 400 names the refused field
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
from grading.models import Capability
from grading.registry.future_history import PrefixesRefused, set_future_history

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")


class FutureHistoryView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(parameters=[PROJECT], responses=OpenApiTypes.OBJECT, summary="Benchmarks whose images hold future history")
    def get(self, request):
        project = project_for_request(request, Capability.VIEW, Capability.EXPORT)
        return Response({"prefixes": list(project.future_history_prefixes or [])})

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
        summary="Name the benchmarks whose images hold future history (admin)",
    )
    def put(self, request):
        project = project_for_request(request, Capability.MANAGE)
        body = request.data
        if not isinstance(body, dict) or set(body) != {"prefixes"}:
            return error(status.HTTP_400_BAD_REQUEST, 'the body is {"prefixes": [instance-id prefixes]}', field="prefixes")
        try:
            prefixes = set_future_history(project=project, prefixes=body["prefixes"])
        except PrefixesRefused as exc:
            return error(status.HTTP_400_BAD_REQUEST, str(exc), field=exc.field)
        return Response({"prefixes": prefixes})
