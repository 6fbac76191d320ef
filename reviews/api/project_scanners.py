"""A project's own scanners over the API (docs/scanners.md#a-projects-own-scanners).

GET  /api/v1/scanners/custom/?project=P               every version of the project's scanners
                                                      (admin, auditor)
POST /api/v1/scanners/custom/?project=P               {"name", "kind": "pattern" | "llm",
                                                       "definition", "category", "description"}:
                                                      define or change one (admin); a new
                                                      definition is a new version (201), the
                                                      same one again the version it is (200);
                                                      400 names the refused field
POST /api/v1/scanners/custom/<name>/runs/?project=P   {"run": name, "step": n}: run the newest
                                                      version (or `<name>@<n>`) over the run or
                                                      one step (admin); 202, with the counts
                                                      when it finished before the answer
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
from grading.jobs.project_scanners import (
    ScannerDefinitionError,
    define_scanner,
    newest_scanner,
    scanners_of,
    scope_for,
)
from grading.models import Capability, ProjectScanner
from grading.queueing import queue

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")


def scanner_dict(scanner: ProjectScanner) -> dict:
    return {
        "name": scanner.name,
        "version": scanner.version,
        "scanner": scanner.author,
        "kind": scanner.kind,
        "category": scanner.category,
        "definition": scanner.definition,
        "description": scanner.description,
        "created_by": scanner.created_by.get_username() if scanner.created_by else "",
        "created_at": scanner.created_at.isoformat(),
    }


class ProjectScannerListCreateView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(parameters=[PROJECT], responses=OpenApiTypes.OBJECT, summary="The project's own scanners, every version")
    def get(self, request):
        project = project_for_request(request, Capability.AUDIT)
        return Response([scanner_dict(s) for s in scanners_of(project)])

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
        summary="Define or change a project's scanner: a pattern of literals or an LLM question (admin)",
    )
    def post(self, request):
        project = project_for_request(request, Capability.MANAGE)
        try:
            scanner, created = define_scanner(project=project, data=request.data, user=request.user)
        except ScannerDefinitionError as exc:
            return error(status.HTTP_400_BAD_REQUEST, str(exc), field=exc.field)
        return Response(scanner_dict(scanner), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class ProjectScannerRunView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses=OpenApiTypes.OBJECT,
        summary="Run a project's scanner over a run or one of its steps (admin)",
    )
    def post(self, request, name: str):
        project = project_for_request(request, Capability.MANAGE)
        scanner = newest_scanner(project, name)
        if scanner is None:
            return error(status.HTTP_404_NOT_FOUND, f"no scanner {name[:80]!r} in {project.name}", field="name")
        data = request.data
        if not isinstance(data, dict):
            return error(status.HTTP_400_BAD_REQUEST, 'the body is {"run": name, "step": n}', field="body")
        unknown = sorted(set(data) - {"run", "step"})
        if unknown:
            return error(status.HTTP_400_BAD_REQUEST, f"unknown field {unknown[0]!r}", field=unknown[0])
        try:
            scope = scope_for(project, data.get("run"), data.get("step"))
        except ScannerDefinitionError as exc:
            return error(status.HTTP_400_BAD_REQUEST, str(exc), field=exc.field)
        # Nothing is written here, so the task may start before this answer; a worker runs it, or
        # (no broker configured, as in the tests) it runs now and its counts come back.
        queued = queue("grading.run_project_scanner", scanner_id=scanner.pk, run_id=scope.run_id, step=scope.step)
        body: dict = {"scanner": scanner.author, "run": data["run"], "step": scope.step, "task": queued.id}
        if queued.successful():
            body["result"] = queued.result
        elif queued.failed():
            body["error"] = "the scan failed on the worker; its log says why"
        return Response(body, status=status.HTTP_202_ACCEPTED)
