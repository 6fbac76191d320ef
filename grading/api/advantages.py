"""GET /api/v1/advantages/: redistributed advantages for trainers, streamed."""

from __future__ import annotations

from django.http import FileResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import project_for_request, run_for_request
from grading.method import export
from grading.method.services import ensure_computed_many, resolve_mapping
from grading.models import FactorMapping


class FileExportNegotiation(BaseContentNegotiation):
    """The file format is the `format` parameter; Accept only matters for JSON errors."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class AdvantageExportView(APIView):
    content_negotiation_class = FileExportNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("run", str, required=True),
            OpenApiParameter("step", int, description="one step; all steps of the run when omitted"),
            OpenApiParameter("mapping", str, description="mapping id or name@version; the run's active mapping when omitted"),
            OpenApiParameter("format", str, enum=list(export.FORMATS), description="jsonl (default), csv or parquet"),
            OpenApiParameter("project", str, description="required with a session login; a token implies its project"),
        ],
        responses={(200, "application/x-ndjson"): OpenApiTypes.BINARY, (200, "text/csv"): OpenApiTypes.BINARY,
                   (200, "application/vnd.apache.parquet"): OpenApiTypes.BINARY},
        summary="Export gagar-advantage/1 rows (one per rollout)",
    )
    def get(self, request):
        project, problem = project_for_request(request, "export")
        if problem:
            return problem
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in export.FORMATS:
            return error(status.HTTP_400_BAD_REQUEST, f"format must be one of {', '.join(export.FORMATS)}")
        run, problem = run_for_request(request, project)
        if problem:
            return problem
        steps = run.steps.order_by("number")
        step = request.query_params.get("step")
        if step is not None:
            if not step.isdigit():
                return error(status.HTTP_400_BAD_REQUEST, "query parameter 'step' must be a non-negative integer")
            steps = steps.filter(number=int(step))
        steps = list(steps)
        if step is not None and not steps:
            return error(status.HTTP_404_NOT_FOUND, f"run {run.name!r} has no step {step}")
        try:
            mapping = resolve_mapping(run, request.query_params.get("mapping"))
        except FactorMapping.DoesNotExist as exc:
            return error(status.HTTP_404_NOT_FOUND, str(exc) or "no such mapping")
        ensure_computed_many(steps=steps, mapping=mapping)
        stem = f"{run.name}-{'step' + step if step is not None else 'all'}-{mapping.label}".replace("@", "_v")
        headers = {"X-Gagar-Mapping": mapping.label, "Content-Disposition": f'attachment; filename="{stem}.{fmt}"'}
        if fmt == "parquet":
            response = FileResponse(export.parquet_file(steps, mapping), content_type=export.CONTENT_TYPES[fmt])
        else:
            stream = export.jsonl_stream(steps, mapping) if fmt == "jsonl" else export.csv_stream(steps, mapping)
            response = StreamingHttpResponse(stream, content_type=export.CONTENT_TYPES[fmt])
        for key, value in headers.items():
            response[key] = value
        return response
