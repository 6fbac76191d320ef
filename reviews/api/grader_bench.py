"""GET /api/v1/grader-bench/: the run's judged groups with every grader's verdict and every
person's judgment (`gagar-grader-bench/1`), JSON Lines streamed or one Parquet file.

Needs the "export" capability, like the labeled export; its lines carry graders' tiers, so
an exporter who holds open blind assignments in the run gets 409 as there."""

from __future__ import annotations

from django.http import HttpResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.views import APIView

from grading.api.advantages import FileExportNegotiation
from grading.api.errors import error
from grading.api.scoping import project_for_request, run_for_request
from grading.models import Capability
from reviews.formats.grader_bench import parquet_bytes
from reviews.selectors import grader_bench as data
from reviews.selectors.blind import open_blind_count

JSONL = "application/x-ndjson"
PARQUET = "application/vnd.apache.parquet"


class GraderBenchExportView(APIView):
    content_negotiation_class = FileExportNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("run", str, required=True),
            OpenApiParameter("format", str, enum=list(data.FORMATS), description="jsonl (default, streamed) or parquet"),
            OpenApiParameter("project", str, description="required with a session login; a token implies its project"),
        ],
        responses={(200, JSONL): OpenApiResponse(OpenApiTypes.BINARY), (200, PARQUET): OpenApiResponse(OpenApiTypes.BINARY)},
        summary="Export judged groups with every grader's verdict and every person's judgment (gagar-grader-bench/1)",
    )
    def get(self, request):
        project = project_for_request(request, Capability.EXPORT)
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in data.FORMATS:
            return error(status.HTTP_400_BAD_REQUEST, "invalid fields", fields={"format": [f"one of {', '.join(data.FORMATS)}"]})
        run = run_for_request(request, project)
        blind = open_blind_count(project=project, user=request.user, run=run)
        if blind:
            return error(
                status.HTTP_409_CONFLICT,
                f"you hold {blind} open blind assignment{'s' if blind != 1 else ''} in run {run.name!r}, and this export "
                "carries the graders' tiers: submit or skip them first, or export with a trainer token",
                open_blind_assignments=blind,
            )
        if fmt == "parquet":
            response = HttpResponse(parquet_bytes(data.bench_lines(run=run)), content_type=PARQUET)
            name = f"{run.name}-grader-bench.parquet"
        else:
            response = StreamingHttpResponse(data.bench_stream(run=run), content_type=JSONL)
            name = f"{run.name}-grader-bench.jsonl"
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=name)
        return response
