"""REST endpoints for factor mappings (docs/method.md §3, §5): list, create, see the active one, activate.

Reading needs "view" (people) or "export" (trainers, who pass `?mapping=` to the export);
creating and activating need "manage". A mapping is immutable once created: a change is
a new version (there is no PUT or PATCH). Activation goes through
`grading.method.services.activation.activate_mapping`, which logs who/when/why and queues the
run's recomputation after the commit; a calibrated mapping below the project's minimum
evidence is refused (409, with what it rests on) unless the body says `"force": true`, and
one fitted on a grader version's verdicts (its `grader`) is refused (409) for a run another
grader grades, whatever `force` says.

Mounted at /api/v1/mappings/ by `include("grading.api.mappings")`; `urlpatterns` is at the end.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import path, reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.parsers import StrictJSONParser
from grading.api.scoping import project_for_request, run_for_request
from grading.api.serializers import (
    ActiveMappingSerializer,
    MappingActivateSerializer,
    MappingActivationSerializer,
    MappingCreateSerializer,
    MappingDetailSerializer,
    MappingListItemSerializer,
)
from grading.jobs.policy import auto_grader_name
from grading.method import selectors
from grading.method.evidence import TooLittleEvidence
from grading.method.services.activation import GraderMismatch, activate_mapping, create_mapping
from grading.method.services.mappings import active_mapping
from grading.models import Capability
from grading.selectors.runs import run_named

READ = (Capability.VIEW, Capability.EXPORT)
PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")
PROBLEM = OpenApiResponse(OpenApiTypes.OBJECT, description='{"detail": ..., "fields": {field: [errors]}}')


class MappingListCreateView(APIView):
    parser_classes = [StrictJSONParser]  # bands are nested JSON; no form encoding of them

    @extend_schema(
        parameters=[PROJECT],
        responses=MappingListItemSerializer(many=True),
        summary="Mappings visible to a project (built-in default and its own), with the runs each is active for",
    )
    def get(self, request):
        project = project_for_request(request, *READ)
        mappings = selectors.mapping_list(project)
        return Response(MappingListItemSerializer(mappings, many=True).data)

    @extend_schema(
        parameters=[PROJECT],
        request=MappingCreateSerializer,
        responses={201: MappingDetailSerializer, 400: PROBLEM},
        summary="Create a new mapping version (admin); mappings are immutable, so a change is a new version",
    )
    def post(self, request):
        project = project_for_request(request, Capability.MANAGE)
        fields = MappingCreateSerializer(data=request.data)
        if not fields.is_valid():
            return error(status.HTTP_400_BAD_REQUEST, "invalid fields", fields=fields.errors)
        mapping = create_mapping(project=project, user=request.user, **fields.validated_data)
        mapping = selectors.with_active_runs(project, [mapping])[0]
        url = reverse("api-mapping", args=[mapping.pk]) + "?" + urlencode({"project": project.name})
        return Response(MappingDetailSerializer(mapping).data, status=status.HTTP_201_CREATED, headers={"Location": url})


class MappingDetailView(APIView):
    @extend_schema(parameters=[PROJECT], responses=MappingDetailSerializer, summary="One mapping with the full record of its fit")
    def get(self, request, pk: int):
        project = project_for_request(request, *READ)
        mapping = selectors.visible_mapping(project, pk)
        if mapping is None:
            return error(status.HTTP_404_NOT_FOUND, f"no mapping {pk} in {project.name}")
        return Response(MappingDetailSerializer(selectors.with_active_runs(project, [mapping])[0]).data)


class ActiveMappingView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("run", str, required=True), PROJECT],
        responses={200: ActiveMappingSerializer, 400: PROBLEM, 404: PROBLEM},
        summary="The mapping in force for a run, and who activated which mapping when and why",
    )
    def get(self, request):
        run = run_for_request(request, project_for_request(request, *READ))
        history = selectors.activation_history(run)
        mapping = selectors.run_mapping(run, history)
        data = {"run": run.name, "mapping": mapping, "activation": history[0] if history else None, "history": history}
        return Response(ActiveMappingSerializer(data).data)


class MappingActivateView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        parameters=[PROJECT],
        request=MappingActivateSerializer,
        responses={
            201: MappingActivationSerializer,
            400: PROBLEM,
            404: PROBLEM,
            409: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description=(
                    "The mapping is already active for the run; or it is a calibrated mapping fitted on another grader"
                    " than the run's (`grader` names it, `run_grader` the run's policy grader or null when it names"
                    " none); or its fit is below the project's minimum evidence and `force` was not sent; then"
                    " `evidence` says what it rests on"
                ),
            ),
        },
        summary="Make a mapping the run's active one (admin); its advantages are recomputed in the background",
    )
    def post(self, request, pk: int):
        project = project_for_request(request, Capability.MANAGE)
        mapping = selectors.visible_mapping(project, pk)
        if mapping is None:
            return error(status.HTTP_404_NOT_FOUND, f"no mapping {pk} in {project.name}")
        fields = MappingActivateSerializer(data=request.data)
        if not fields.is_valid():
            return error(status.HTTP_400_BAD_REQUEST, "invalid fields", fields=fields.errors)
        run_name = fields.validated_data["run"]
        run = run_named(project, run_name)
        if run is None:
            return error(
                status.HTTP_400_BAD_REQUEST, "invalid fields", fields={"run": [f"no run {run_name!r} in {project.name}"]}
            )
        if active_mapping(run).pk == mapping.pk:
            return error(status.HTTP_409_CONFLICT, f"{mapping.label} is already active for run {run.name!r}")
        try:
            activation = activate_mapping(
                run=run,
                mapping=mapping,
                user=request.user,
                reason=fields.validated_data["reason"],
                override=fields.validated_data["force"],
                run_grader=auto_grader_name(run),
            )
        except GraderMismatch as mismatch:
            return error(status.HTTP_409_CONFLICT, str(mismatch), grader=mapping.grader, run_grader=auto_grader_name(run))
        except TooLittleEvidence as refused:
            return error(
                status.HTTP_409_CONFLICT,
                f"{mapping.label} rests on too little evidence: {'; '.join(refused.evidence.shortfalls)}."
                ' Send "force": true to activate it anyway.',
                evidence=refused.evidence.to_dict(),
            )
        url = reverse("api-mapping-active") + "?" + urlencode({"project": project.name, "run": run.name})
        return Response(MappingActivationSerializer(activation).data, status=status.HTTP_201_CREATED, headers={"Location": url})


urlpatterns = [
    path("", MappingListCreateView.as_view(), name="api-mappings"),
    path("active/", ActiveMappingView.as_view(), name="api-mapping-active"),
    path("<int:pk>/", MappingDetailView.as_view(), name="api-mapping"),
    path("<int:pk>/activate/", MappingActivateView.as_view(), name="api-mapping-activate"),
]
