"""GET /api/v1/graders/compare/: several graders against people on the same groups of a run.

Blindness holds as on the agreement API: the groups withheld from the caller (their open blind
groups, and those the queue may still serve them blind) are left out of every figure."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import project_for_request, run_for_request
from grading.models import Capability
from reviews.selectors import bench as data

MAX_BOOT = 5000
MAX_NAME = 100  # Verdict.grader's length


def parse_graders(value: str) -> tuple[list[str], str | None]:
    """The grader names of `?graders=a,b`, or the reason they are refused."""
    names = [n.strip() for n in value.split(",") if n.strip()] if len(value) <= 2000 else []
    if not names:
        return [], "one or more grader names, comma-separated"
    if len(names) > data.MAX_GRADERS:
        return [], f"at most {data.MAX_GRADERS} graders"
    if len(set(names)) != len(names):
        return [], "a grader is named twice"
    if any(len(n) > MAX_NAME for n in names):
        return [], f"a grader name is at most {MAX_NAME} characters"
    return names, None


class GraderCompareView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("project", str, description="required with a session login; a token implies its project"),
            OpenApiParameter("run", str, required=True, description="the run"),
            OpenApiParameter(
                "graders", str, required=True, description=f"grader names, comma-separated (at most {data.MAX_GRADERS})"
            ),
            OpenApiParameter("n_boot", int, description=f"bootstrap resamples over groups (default 1000, at most {MAX_BOOT})"),
        ],
        responses={200: OpenApiTypes.OBJECT},
        summary="Graders side by side against people: figures with intervals, paired differences, grader-vs-grader "
        "agreement, the human ceiling, tokens and cost per group, n_eff for juries",
    )
    def get(self, request):
        project = project_for_request(request, Capability.VIEW, Capability.EXPORT)
        run = run_for_request(request, project)
        params = request.query_params
        graders, problem = parse_graders(params.get("graders", ""))
        if problem:
            return error(status.HTTP_400_BAD_REQUEST, "invalid fields", fields={"graders": [problem]})
        n_boot = params.get("n_boot", str(data.N_BOOT))
        if not (n_boot.isascii() and n_boot.isdigit() and len(n_boot) <= 10) or not 0 <= int(n_boot) <= MAX_BOOT:
            return error(status.HTTP_400_BAD_REQUEST, "invalid fields", fields={"n_boot": [f"an integer 0..{MAX_BOOT}"]})
        return Response(data.comparison(project=project, run=run, graders=graders, hidden_from=request.user, n_boot=int(n_boot)))
