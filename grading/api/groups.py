"""REST endpoints for groups: streaming ingest, cursor-paginated list, full detail."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import SessionAuthentication, get_authorization_header
from rest_framework.exceptions import APIException, NotFound, ParseError
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import project_for_request
from grading.api.serializers import GroupSummarySerializer, IngestReportSerializer
from grading.formats import params
from grading.formats.linereader import BodyError, iter_lines, open_body
from grading.ingest.service import IngestReport, ingest_group_lines
from grading.method.partial import mode_of
from grading.models import Capability
from grading.projects.access import get_project_for
from grading.projects.viewers import blind_view
from grading.rollouts.blinding import withhold_line
from grading.selectors.groups import group_in_run, group_summaries_page
from grading.selectors.lines import group_as_line

logger = logging.getLogger(__name__)

PROJECT = OpenApiParameter("project", str, required=True, description="Project name")
RUN = OpenApiParameter("run", str, description="Run name")
STEP = OpenApiParameter("step", int, description="Step number")


def _project(request, capability: Capability):
    # These endpoints always name the project, even with a token.
    return project_for_request(request, capability, token_default=False)


class GroupPagination(CursorPagination):
    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def decode_cursor(self, request):
        """DRF's cursor, with its position checked: the position is an id (ASCII digits within
        64 bits), not whatever text the client put there (`p=abc`, `p=1e400`, a NUL)."""
        cursor = super().decode_cursor(request)
        if cursor is None or cursor.position is None:
            return cursor
        position = cursor.position
        if len(position) > 19 or not params.is_whole(position) or int(position) > params.MAX_ID:
            raise NotFound(self.invalid_cursor_message)
        return cursor


class SessionIngestRefused(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = (
        "ingest needs an API token, not a session login: send 'Authorization: Token <secret>' "
        "(manage.py create_api_token; see docs/deployment.md)"
    )
    default_code = "token_required"


class GroupListIngestView(APIView):
    # The body is streamed by hand; no DRF parser may touch (and buffer) it.
    parser_classes: list = []

    def initial(self, request, *args, **kwargs):
        # With a session login DRF's CSRF check reads the body as a form, with no parser to
        # read it (a 415 whatever was sent). Check CSRF and access on Django's request instead
        # (403 / 404 as for any other POST), then say what works.
        django_request = request._request
        session_user = getattr(django_request, "user", None)
        if (
            request.method == "POST"
            and not get_authorization_header(request)
            and session_user is not None
            and session_user.is_authenticated
        ):
            SessionAuthentication().enforce_csrf(django_request)
            name = django_request.GET.get("project", "")
            if not name:
                raise ParseError("query parameter 'project' is required")
            if not params.usable_name(name):
                raise Http404("No such project")
            get_project_for(session_user, name, Capability.INGEST)
            raise SessionIngestRefused()
        super().initial(request, *args, **kwargs)

    @extend_schema(
        parameters=[PROJECT, RUN, STEP, OpenApiParameter("mixed", bool)],
        responses=GroupSummarySerializer(many=True),
        summary="List groups (cursor-paginated summaries)",
    )
    def get(self, request):
        project = _project(request, Capability.VIEW)
        step = params.optional_whole(request.query_params.get("step"), "step")  # ParamError: a JSON 400
        mixed = request.query_params.get("mixed")
        if mixed is not None and mixed not in {"true", "false"}:
            return error(status.HTTP_400_BAD_REQUEST, "query parameter 'mixed' must be true or false")
        paginator = GroupPagination()
        page = group_summaries_page(
            paginator,
            request,
            project=project,
            run=request.query_params.get("run"),
            step=step,
            mixed=None if mixed is None else mixed == "true",
        )
        return paginator.get_paginated_response(GroupSummarySerializer(page, many=True).data)

    @extend_schema(
        parameters=[PROJECT],
        request={"application/x-ndjson": OpenApiTypes.BINARY},
        responses={
            200: IngestReportSerializer,
            400: OpenApiResponse(IngestReportSerializer, description="An unreadable or empty body (`aborted` says why)"),
            207: OpenApiResponse(IngestReportSerializer, description="Some lines refused; the rest stored"),
            422: OpenApiResponse(IngestReportSerializer, description="Every line refused"),
            503: OpenApiResponse(IngestReportSerializer, description="Database unavailable; resend (idempotent)"),
        },
        summary="Ingest gagar-group/1 lines (JSON Lines, optionally gzip), streamed",
    )
    def post(self, request):
        project = _project(request, Capability.INGEST)
        report = IngestReport()
        try:
            body = open_body(request._request, content_encoding=request.headers.get("Content-Encoding", ""))
            lines = iter_lines(body, max_line_bytes=settings.GAGAR_MAX_LINE_BYTES)
            ingest_group_lines(project=project, lines=lines, report=report)
        except BodyError as exc:
            report.aborted = str(exc)
            return _report(report, status=status.HTTP_400_BAD_REQUEST)
        except (OperationalError, InterfaceError) as exc:
            logger.warning("ingest aborted by the database: %s", exc)
            report.aborted = (
                f"database unavailable after line {report.lines}: lines before it that the report counts are stored; "
                "resend the body (stored lines come back as unchanged)"
            )
            return _report(report, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "5"})
        except DatabaseError as exc:  # e.g. a value PostgreSQL refuses that validation did not foresee
            logger.exception("ingest failed in the database")
            report.aborted = f"database refused the data after line {report.lines}: {exc.__class__.__name__}"
            return _report(report, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        if report.lines == 0:
            report.aborted = "empty body: send one gagar-group/1 JSON object per line"
            return _report(report, status=status.HTTP_400_BAD_REQUEST)
        if report.refused == 0:
            code = status.HTTP_200_OK
        elif report.accepted == 0:
            code = status.HTTP_422_UNPROCESSABLE_ENTITY
        else:
            code = status.HTTP_207_MULTI_STATUS
        return _report(report, status=code)


def _report(report: IngestReport, **kwargs) -> Response:
    return Response(IngestReportSerializer(report.as_dict()).data, **kwargs)


class GroupDetailView(APIView):
    @extend_schema(
        parameters=[PROJECT, OpenApiParameter("run", str, required=True)],
        responses={200: OpenApiTypes.OBJECT},
        summary="One group in full, in its gagar-group/1 shape (for a caller judging it blind: lanes, no producer fields)",
    )
    def get(self, request, uid: str):
        project = _project(request, Capability.VIEW)
        run = request.query_params.get("run", "")
        if not run:
            return error(status.HTTP_400_BAD_REQUEST, "query parameter 'run' is required")
        group = group_in_run(project, run, uid)
        if group is None:
            return error(status.HTTP_404_NOT_FOUND, f"no group {uid!r} in run {run!r}")
        line = group_as_line(group)
        policy = group.run.drop_policy or {}
        for rollout in line["rollouts"]:  # read only, like `passed`: what the run's drop policy makes of a drop
            if rollout.get("dropped"):
                rollout["drop_mode"] = mode_of(rollout["dropped"], policy)
        blind = blind_view(user=request.user, group=group)
        if blind is not None:  # the caller judges this group blind: lanes, not indexes; no producer fields
            by_index = {r["index"]: r for r in line["rollouts"]}
            line["rollouts"] = [
                withhold_line(by_index[i], blind.fields, lane=blind.labels.get(i, "?")) for i in blind.order(by_index)
            ]
        return Response(line)
