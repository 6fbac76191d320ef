"""REST endpoints for importing agent runs: upload -> ImportJob -> Celery task; poll the job."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import project_for_request, request_token
from grading.formats import params
from grading.formats.groupline import MAX_INT, MAX_NAME, LineError, check_name
from grading.ingest.importers.scan import FORMATS
from grading.ingest.imports.jobs import create_import_job
from grading.ingest.imports.uploads import UploadRefused, store_upload
from grading.models import Capability, ImportJob
from grading.projects.access import get_project_for
from grading.selectors.imports import import_job, import_jobs_page

PROJECT = OpenApiParameter("project", str, required=True, description="Project name")
JOBS_PER_PAGE = 50


class ImportJobSerializer(serializers.ModelSerializer):
    run = serializers.CharField(source="run.name")
    project = serializers.CharField(source="project.name")
    progress = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    warnings = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text=("each file, attempt or group that was given and not imported: {ref, reason}; empty when all of it was"),
    )

    class Meta:
        model = ImportJob
        fields = [
            "id",
            "url",
            "project",
            "run",
            "step",
            "format",
            "reward_threshold",
            "status",
            "progress",
            "uploaded_files",
            "summary",
            "warnings",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_progress(self, job: ImportJob) -> dict:
        return {"done": job.progress_done, "total": job.progress_total, "percent": job.percent}

    def get_url(self, job: ImportJob) -> str:
        return reverse("api-import", args=[job.pk])


def _run_name(value: str) -> None:  # a field validator: DRF ignores what it returns
    try:
        check_name(value, "run", kind="run")
    except LineError as exc:
        raise serializers.ValidationError(str(exc)) from None


class ImportUploadSerializer(serializers.Serializer):
    run = serializers.CharField(max_length=MAX_NAME, validators=[_run_name])
    step = serializers.IntegerField(min_value=0, max_value=MAX_INT)
    format = serializers.ChoiceField(choices=FORMATS, default="auto")
    reward_threshold = serializers.FloatField(
        required=False,
        allow_null=True,
        default=None,
        help_text="verl dumps: a score >= this passes (without it, scores must be 0 or 1)",
    )


class ImportListCreateView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        parameters=[
            PROJECT,
            OpenApiParameter(
                "before",
                int,
                description=(
                    'only jobs with a smaller id: the next page, as the `Link: <…>; rel="next"` header of a full page gives it'
                ),
            ),
        ],
        responses=ImportJobSerializer(many=True),
        summary=f"Import jobs of a project, newest first, {JOBS_PER_PAGE} a page",
    )
    def get(self, request):
        project = project_for_request(request, Capability.VIEW, token_default=False)
        before = params.optional_whole(request.query_params.get("before"), "before", maximum=params.MAX_ID)
        page = import_jobs_page(project, before=before, limit=JOBS_PER_PAGE + 1)
        response = Response(ImportJobSerializer(page[:JOBS_PER_PAGE], many=True).data)
        if len(page) > JOBS_PER_PAGE:
            query = urlencode({**request.query_params.dict(), "before": page[JOBS_PER_PAGE - 1].pk})
            response["Link"] = f'<{request.build_absolute_uri(reverse("api-imports"))}?{query}>; rel="next"'
        return response

    @extend_schema(
        parameters=[PROJECT],
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {
                    "run": {"type": "string"},
                    "step": {"type": "integer"},
                    "format": {"type": "string", "enum": list(FORMATS)},
                    "reward_threshold": {"type": "number"},
                    "file": {"type": "array", "items": {"type": "string", "format": "binary"}},
                },
            }
        },
        responses={
            202: ImportJobSerializer,
            400: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="Bad fields, file names, an archive that cannot be read, "
                "or an upload the project's disk quota for imports cannot hold; "
                "archives are unpacked and checked by the job (a refused member fails it)",
            ),
        },
        summary="Upload agent runs (.tar.gz/.zip archive or files) to import as a background job",
    )
    def post(self, request):
        project = project_for_request(request, Capability.INGEST, token_default=False)
        fields = ImportUploadSerializer(data=request.data)
        if not fields.is_valid():
            return error(status.HTTP_400_BAD_REQUEST, "invalid fields", fields=fields.errors)
        files = request.FILES.getlist("file") + request.FILES.getlist("files")
        try:
            _, sources, uploaded = store_upload(project=project, files=files)
            job = create_import_job(
                project=project,
                user=request.user,
                run=fields.validated_data["run"],
                step=fields.validated_data["step"],
                fmt=fields.validated_data["format"],
                sources=sources,
                uploaded=uploaded,
                reward_threshold=fields.validated_data.get("reward_threshold"),
            )
        except UploadRefused as exc:
            return error(status.HTTP_400_BAD_REQUEST, str(exc))
        job = import_job(job.pk)  # read again: with eager Celery (no broker) the import has already run
        data = ImportJobSerializer(job).data
        return Response(data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["url"]})


class ImportDetailView(APIView):
    @extend_schema(responses=ImportJobSerializer, summary="Status, progress and summary of one import job")
    def get(self, request, pk: int):
        job = import_job(pk)
        if job is None:
            raise Http404("No such import job")
        get_project_for(request.user, job.project.name, Capability.VIEW, token=request_token(request))
        return Response(ImportJobSerializer(job).data)
