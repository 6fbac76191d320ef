"""GET /api/v1/labeled-groups/: judged groups for trainers (JSON Lines) and grader fine-tuning (SFT).

Needs the "export" capability (trainer tokens, admins), like the advantages export: a
reviewer gets 403, a non-member 404, an anonymous caller 401. Its lines carry the grader's
names, tiers and evidence, so an exporter (an admin) who still holds open blind assignments
in the run gets 409 until they submit or skip them (a trainer account has no assignments;
its token is the way to export meanwhile). The body is streamed
(reviews.selectors.labeled reads the groups in chunks); its line shapes are documented in
README.md and reviews/formats/labeled.py.
"""

from __future__ import annotations

from itertools import chain

from django.http import StreamingHttpResponse
from django.utils.dateparse import parse_datetime
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.views import APIView

from grading.api.advantages import FileExportNegotiation
from grading.api.errors import error
from grading.api.scoping import project_for_request, run_for_request
from grading.models import Capability
from reviews.selectors import labeled as selectors_labeled
from reviews.selectors.blind import open_blind_count

CONTENT_TYPE = "application/x-ndjson"
PROBLEM = OpenApiResponse(OpenApiTypes.OBJECT, description='{"detail": ...}')


class LabeledGroupExportView(APIView):
    content_negotiation_class = FileExportNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("run", str, required=True),
            OpenApiParameter(
                "since",
                OpenApiTypes.DATETIME,
                description=(
                    "ISO 8601 with a timezone (Z or +00:00, the + URL-encoded as %2B): only groups whose changed_at "
                    "(latest judgment, adjudication, verdict, cheat signal, cheat decision or audit) is strictly later"
                ),
            ),
            OpenApiParameter(
                "format",
                str,
                enum=list(selectors_labeled.FORMATS),
                description=(
                    "jsonl (default): one gagar-labeled-group/1 line per judged group; sft: one grader chat example per "
                    "group whose label fills the verdict schema"
                ),
            ),
            OpenApiParameter(
                "label",
                str,
                enum=list(selectors_labeled.LABELS),
                description=(
                    "consensus (default): every judged group, labeled by its adjudication or else its reviews' "
                    "consensus; adjudicated: adjudicated groups only"
                ),
            ),
            OpenApiParameter("project", str, description="required with a session login; a token implies its project"),
        ],
        responses={
            (200, CONTENT_TYPE): OpenApiResponse(
                OpenApiTypes.BINARY,
                description=(
                    "one JSON object per line. A body without lines says why in the X-Gagar-Empty-Reason header (no judged "
                    "group, none changed since `since`, or -- for format=sft -- no label with a tier and all five rubric "
                    "scores on every passing rollout); X-Gagar-Empty is 'true' then"
                ),
            ),
            400: PROBLEM,
            401: PROBLEM,
            403: PROBLEM,
            404: PROBLEM,
            409: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description=(
                    "the caller holds open blind assignments in this run; submit or skip them, or export "
                    "with the token of an account that does not review"
                ),
            ),
        },
        summary="Export judged groups (gagar-labeled-group/1) or grader SFT examples, ordered by (step, uid)",
    )
    def get(self, request):
        project = project_for_request(request, Capability.EXPORT)
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in selectors_labeled.FORMATS:
            return error(status.HTTP_400_BAD_REQUEST, f"format must be one of {', '.join(selectors_labeled.FORMATS)}")
        label = request.query_params.get("label", "consensus")
        if label not in selectors_labeled.LABELS:
            return error(status.HTTP_400_BAD_REQUEST, f"label must be one of {', '.join(selectors_labeled.LABELS)}")
        since = None
        if "since" in request.query_params:
            raw = request.query_params["since"]
            try:
                since = parse_datetime(raw.strip())
            except ValueError:
                since = None
            if since is None:
                hint = " (a '+' in a URL reads as a space: write %2B or Z)" if " " in raw.strip() else ""
                return error(status.HTTP_400_BAD_REQUEST, f"since must be an ISO 8601 datetime, got {raw[:40]!r}{hint}")
            if since.tzinfo is None:
                return error(status.HTTP_400_BAD_REQUEST, "since needs a timezone, e.g. 2026-05-01T00:00:00Z")
        run = run_for_request(request, project)
        blind = open_blind_count(project=project, user=request.user, run=run)
        if blind:
            return error(
                status.HTTP_409_CONFLICT,
                f"you hold {blind} open blind assignment{'s' if blind != 1 else ''} in run {run.name!r}, and this export "
                "carries the grader's names, tiers and evidence: submit or skip them on the review desk first, "
                "or export with a token of an account that does not review (a trainer token)",
                open_blind_assignments=blind,
            )
        stream = selectors_labeled.export_stream(run=run, fmt=fmt, since=since, adjudicated_only=label == "adjudicated")
        first = next(stream, None)  # an export without lines says why, rather than a silent empty 200
        response = StreamingHttpResponse(chain([first], stream) if first is not None else iter(()), content_type=CONTENT_TYPE)
        if first is None:
            response["X-Gagar-Empty"] = "true"
            response["X-Gagar-Empty-Reason"] = selectors_labeled.empty_reason(
                run=run, fmt=fmt, since=since, adjudicated_only=label == "adjudicated"
            )
        suffix = "sft" if fmt == "sft" else "labeled"
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=f"{run.name}-{suffix}.jsonl")
        return response
