"""REST endpoints for groups: streaming ingest, cursor-paginated list, full detail."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import project_for_request
from grading.api.serializers import GroupSummarySerializer, IngestReportSerializer
from grading.formats.linereader import BodyError, iter_lines, open_body
from grading.ingest.service import IngestReport, ingest_group_lines
from grading.models import Group
from grading.selectors import group_as_line

logger = logging.getLogger(__name__)

PROJECT = OpenApiParameter("project", str, required=True, description="Project name")
RUN = OpenApiParameter("run", str, description="Run name")
STEP = OpenApiParameter("step", int, description="Step number")


def _project(request, capability: str):
    # These endpoints always name the project, even with a token.
    return project_for_request(request, capability, token_default=False)


class GroupPagination(CursorPagination):
    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class GroupListIngestView(APIView):
    # The body is streamed by hand; no DRF parser may touch (and buffer) it.
    parser_classes: list = []

    @extend_schema(
        parameters=[PROJECT, RUN, STEP, OpenApiParameter("mixed", bool)],
        responses=GroupSummarySerializer(many=True),
        summary="List groups (cursor-paginated summaries)",
    )
    def get(self, request):
        project, problem = _project(request, "view")
        if problem:
            return problem
        groups = Group.objects.filter(run__project=project).select_related("run", "step", "task")
        run = request.query_params.get("run")
        if run:
            groups = groups.filter(run__name=run)
        step = request.query_params.get("step")
        if step is not None:
            if not step.isdigit():
                return error(status.HTTP_400_BAD_REQUEST, "query parameter 'step' must be a non-negative integer")
            groups = groups.filter(step__number=int(step))
        mixed = request.query_params.get("mixed")
        if mixed is not None:
            if mixed not in {"true", "false"}:
                return error(status.HTTP_400_BAD_REQUEST, "query parameter 'mixed' must be true or false")
            groups = groups.filter(is_mixed=mixed == "true")
        paginator = GroupPagination()
        page = paginator.paginate_queryset(groups, request, view=self)
        return paginator.get_paginated_response(GroupSummarySerializer(page, many=True).data)

    @extend_schema(
        parameters=[PROJECT],
        request={"application/x-ndjson": OpenApiTypes.BINARY},
        responses={
            200: IngestReportSerializer,
            207: OpenApiResponse(IngestReportSerializer, description="Some lines refused; the rest stored"),
            422: OpenApiResponse(IngestReportSerializer, description="Every line refused"),
            503: OpenApiResponse(IngestReportSerializer, description="Database unavailable; resend (idempotent)"),
        },
        summary="Ingest gagar-group/1 lines (JSON Lines, optionally gzip), streamed",
    )
    def post(self, request):
        project, problem = _project(request, "ingest")
        if problem:
            return problem
        report = IngestReport()
        try:
            body = open_body(request._request, content_encoding=request.headers.get("Content-Encoding", ""))
            lines = iter_lines(body, max_line_bytes=settings.GAGAR_MAX_LINE_BYTES)
            ingest_group_lines(project=project, lines=lines, report=report)
        except BodyError as exc:
            report.aborted = str(exc)
            return Response(report.as_dict(), status=status.HTTP_400_BAD_REQUEST)
        except (OperationalError, InterfaceError) as exc:
            logger.warning("ingest aborted by the database: %s", exc)
            report.aborted = (
                f"database unavailable after line {report.lines}: lines before it that the report counts are stored; "
                "resend the body (stored lines come back as unchanged)"
            )
            return Response(report.as_dict(), status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "5"})
        except DatabaseError as exc:  # e.g. a value PostgreSQL refuses that validation did not foresee
            logger.exception("ingest failed in the database")
            report.aborted = f"database refused the data after line {report.lines}: {exc.__class__.__name__}"
            return Response(report.as_dict(), status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        if report.lines == 0:
            report.aborted = "empty body: send one gagar-group/1 JSON object per line"
            return Response(report.as_dict(), status=status.HTTP_400_BAD_REQUEST)
        if report.refused == 0:
            code = status.HTTP_200_OK
        elif report.accepted == 0:
            code = status.HTTP_422_UNPROCESSABLE_ENTITY
        else:
            code = status.HTTP_207_MULTI_STATUS
        return Response(report.as_dict(), status=code)


class GroupDetailView(APIView):
    @extend_schema(
        parameters=[PROJECT, OpenApiParameter("run", str, required=True)],
        responses={200: OpenApiTypes.OBJECT},
        summary="One group in full, in its gagar-group/1 shape",
    )
    def get(self, request, uid: str):
        project, problem = _project(request, "view")
        if problem:
            return problem
        run = request.query_params.get("run", "")
        if not run:
            return error(status.HTTP_400_BAD_REQUEST, "query parameter 'run' is required")
        group = Group.objects.select_related("run", "step", "task").filter(run__project=project, run__name=run, uid=uid).first()
        if group is None:
            return error(status.HTTP_404_NOT_FOUND, f"no group {uid!r} in run {run!r}")
        return Response(group_as_line(group))
