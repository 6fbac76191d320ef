"""Verdicts from a grader that runs elsewhere (grading.verdicts.external).

    POST /api/v1/verdicts/?project=P   {"run", "step", "uid", "grader": "name@version", "judgments": [...]}

201 with {"result": "stored", ..., "uncited": [rollout indexes]} when stored, 200 with
"unchanged" for the same verdict again, 409 for a different verdict from the same grader version
on the same group, 400 naming the `field` (and the checks' `errors`) for bad input -- a
citation that does not resolve as "judgments[<i>].evidence[<k>]" -- 404 when there is no such
group. Evidence is optional: `uncited` lists the rollouts whose judgment speaks against them
(a tier below T1, a low score, a cheat flag) without a citation, stored marked so. Only
members holding Capability.GRADE may post: the project's admins and grader accounts (role
`grader`, e.g. a service account made for the grading fleet on the Team page).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.parsers import StrictJSONParser
from grading.api.scoping import project_for_request
from grading.models import Capability
from grading.projects.accounts import acting_name
from grading.verdicts.external import ExternalVerdictError, record_external_verdict

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")


class VerdictPostView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses={
            201: OpenApiResponse(description="stored; `uncited` lists the rollouts judged against without a citation"),
            200: OpenApiResponse(description="the same verdict was stored before: unchanged"),
            400: OpenApiResponse(
                description="a refused field, named in `field` (a citation: judgments[i].evidence[k]); "
                "the checks' messages in `errors`"
            ),
            409: OpenApiResponse(description="this grader version gave the group a different verdict"),
        },
        summary="Store an external grader's verdict on a group (an admin or a grader account)",
    )
    def post(self, request):
        project = project_for_request(request, Capability.GRADE)
        try:
            outcome = record_external_verdict(project=project, body=request.data, posted_by=acting_name(request.user))
        except ExternalVerdictError as exc:
            extra = {"errors": exc.errors} if exc.errors else {}
            return error(exc.status, str(exc), field=exc.field, **extra)
        verdict = outcome.verdict
        data = {
            "result": outcome.result,
            "grader": verdict.grader,
            "uid": verdict.group.uid,
            "status": verdict.status,
            "uncited": outcome.uncited,
        }
        return Response(data, status=201 if outcome.result == "stored" else 200)
