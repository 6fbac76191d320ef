"""The scanners' validation set over the API (docs/scanners.md#validation-sets).

GET  /api/v1/scanners/?project=P     each scanner category with its current version and the
                                     older versions with findings stored, each counted
                                     against the labeled rollouts (TP, FP, FN, precision and
                                     recall with Wilson 95 % intervals)
GET  /api/v1/scan-labels/?project=P  the labels, newest first, 100 a page (`before`, and a
                                     `Link: <...>; rel="next"` header on a full page)
POST /api/v1/scan-labels/?project=P  JSON Lines, or a JSON list, of {"group", "run", "rollout",
                                     "category", "label": "cheat" | "honest", "note"}: all
                                     stored, or none (400 naming each refused line and field)

Admins and auditors only (Capability.AUDIT): a reviewer gets 403, a non-member 404, nobody 401.
Labels and findings on groups the caller still judges blind are left out, as in the audit.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import project_for_request
from grading.formats import params
from grading.formats.scanlabels import MAX_BODY_BYTES
from grading.models import Capability
from grading.projects.accounts import acting_name
from grading.verdicts.scan_labels import LabelsRefused, upload_scan_labels
from reviews.selectors.scanners import LabelRow, ScannerReport, scan_labels_page, scanner_report

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")
LABELS_PER_PAGE = 100


class _RawBody(BaseParser):
    """The body as bytes, `{"body": ...}`, read up to one byte past the limit
    (grading.formats.scanlabels checks it): the service parses the labels, line by line."""

    def parse(self, stream, media_type=None, parser_context=None) -> dict[str, bytes]:
        return {"body": b"" if stream is None else stream.read(MAX_BODY_BYTES + 1)}


class JSONBody(_RawBody):
    media_type = "application/json"


class JSONLinesBody(_RawBody):
    media_type = "application/x-ndjson"


class JSONLBody(_RawBody):
    media_type = "application/jsonl"


def report_dict(report: ScannerReport) -> dict:
    return {
        "labeled_rollouts": report.labeled_rollouts,
        "rescreened": report.rescreened,
        "capped": report.capped,
        "scanners": [
            {
                "category": row.slug,
                "number": row.number,
                "title": row.title,
                "kind": row.kind,
                "version": row.version,
                "labeled": row.labeled,
                "labeled_cheat": row.labeled_cheat,
                "versions": [
                    {"scanner": v.scanner, "version": v.version, "current": v.current, "findings": v.findings}
                    | v.figures.as_dict()
                    for v in row.versions
                ],
            }
            for row in report.rows
        ],
    }


def label_dict(label: LabelRow) -> dict:
    return {
        "id": label.id,
        "run": label.run,
        "group": label.group,
        "rollout": label.rollout,
        "category": label.category,
        "label": label.label,
        "source": label.source,
        "author": label.author,
        "note": label.note,
        "created_at": label.created_at.isoformat(),
    }


class ScannerListView(APIView):
    @extend_schema(
        parameters=[PROJECT],
        responses=OpenApiTypes.OBJECT,
        summary="Each scanner version against the labeled rollouts: TP, FP, FN, precision, recall (admin, auditor)",
    )
    def get(self, request):
        project = project_for_request(request, Capability.AUDIT)
        return Response(report_dict(scanner_report(project, hidden_from=request.user)))


class ScanLabelListUploadView(APIView):
    parser_classes = [JSONBody, JSONLinesBody, JSONLBody]

    @extend_schema(
        parameters=[
            PROJECT,
            OpenApiParameter(
                "before", int, description="only labels with a smaller id: the next page, as the `Link` header gives it"
            ),
        ],
        responses=OpenApiTypes.OBJECT,
        summary=f"The scanners' labels, newest first, {LABELS_PER_PAGE} a page (admin, auditor)",
    )
    def get(self, request):
        project = project_for_request(request, Capability.AUDIT)
        before = params.optional_whole(request.query_params.get("before"), "before", maximum=params.MAX_ID)
        page = scan_labels_page(project, before=before, limit=LABELS_PER_PAGE + 1, hidden_from=request.user)
        response = Response([label_dict(label) for label in page[:LABELS_PER_PAGE]])
        if len(page) > LABELS_PER_PAGE:
            query = urlencode({**request.query_params.dict(), "before": page[LABELS_PER_PAGE - 1].id})
            response["Link"] = f'<{request.build_absolute_uri(reverse("api-scan-labels"))}?{query}>; rel="next"'
        return response

    @extend_schema(
        parameters=[PROJECT],
        request={"application/x-ndjson": OpenApiTypes.BINARY, "application/json": OpenApiTypes.OBJECT},
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description='{"stored": n}: every label stored'),
            400: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="nothing stored: `errors` lists each refused {line, field, message}; `line` and `field` the first",
            ),
        },
        summary="Label rollouts a cheat or honest per scanner category, all or none (admin, auditor)",
    )
    def post(self, request):
        project = project_for_request(request, Capability.AUDIT)
        body = request.data.get("body", b"") if isinstance(request.data, dict) else b""
        try:
            stored = upload_scan_labels(project=project, body=body, author=acting_name(request.user) or "")
        except LabelsRefused as exc:
            first = exc.errors[0]
            return error(
                status.HTTP_400_BAD_REQUEST,
                f"nothing stored: {exc.count} refusal{'s' * (exc.count != 1)}; the first: {first}",
                line=first.line,
                field=first.field,
                errors=[e.as_dict() for e in exc.errors],
                refused=exc.count,
            )
        return Response({"stored": stored})
