"""Runs with their grading policy, and the grading status of a step: what a trainer needs to
post a step, wait for it and know when its advantages are final.

    POST  /api/v1/runs/?project=P                 create a run with its policy (admin)
    GET   /api/v1/runs/?project=P                 the project's runs
    GET   /api/v1/runs/{name}/?project=P          one run's policy
    PATCH /api/v1/runs/{name}/?project=P          change it (admin)
    POST  /api/v1/runs/{name}/metrics/?project=P  log a step's metrics (trainer, ingest)
    GET   /api/v1/runs/{name}/metrics/?project=P  the trainer's series, the desk's, the warnings
    GET   /api/v1/steps/{n}/?project=P&run=R      grading status of a step
    POST  /api/v1/steps/{n}/grade/?project=P&run=R {"backend": ...}   (re)start grading a step (admin)
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.parsers import StrictJSONParser
from grading.api.scoping import project_for_request, run_for_request, run_or_404, step_or_404
from grading.api.serializers import RunSerializer, StepGradingSerializer, StepStatusSerializer
from grading.formats import params
from grading.health.metrics import MetricsError, parse_metrics
from grading.health.services import record_metrics
from grading.jobs.grade import queue_jury_step, queue_step
from grading.jobs.policy import PolicyError, create_run, update_run_policy
from grading.method.services.mappings import active_mapping
from grading.models import Capability, Run, Step
from grading.registry.backends import BACKENDS, GraderUnavailable
from grading.selectors.metrics import run_health
from grading.selectors.runs import run_list, run_with_step_count
from grading.waits.progress import step_status

PROJECT = OpenApiParameter("project", str, description="required with a session login; a token implies its project")
RUN = OpenApiParameter("run", str, required=True)


def _policy_error(exc: PolicyError) -> Response:
    return error(status.HTTP_400_BAD_REQUEST, str(exc), field=exc.field)


def _body(request) -> dict | Response:
    if not isinstance(request.data, dict):
        return error(status.HTTP_400_BAD_REQUEST, "the body must be a JSON object")
    return request.data


class RunListCreateView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        parameters=[PROJECT],
        responses={200: OpenApiResponse(RunSerializer(many=True), description="the runs, by name")},
        operation_id="v1_runs_list",
        summary="List the project's runs with their grading policy",
    )
    def get(self, request):
        project = project_for_request(request, Capability.VIEW, Capability.EXPORT)
        return Response(RunSerializer(run_list(project), many=True).data)

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses={201: RunSerializer, 400: OpenApiResponse(description="a refused field, named in `field`")},
        summary="Create a run with its grading policy (admin)",
    )
    def post(self, request):
        project = project_for_request(request, Capability.MANAGE)
        body = _body(request)
        if isinstance(body, Response):
            return body
        fields = dict(body)
        try:
            run = create_run(project=project, name=fields.pop("name", None), policy=fields)
        except PolicyError as exc:
            return _policy_error(exc)
        return Response(RunSerializer(run_with_step_count(run)).data, status=status.HTTP_201_CREATED)


class RunDetailView(APIView):
    parser_classes = [StrictJSONParser]

    def _run(self, request, name: str, *capabilities: Capability) -> Run:
        return run_or_404(project_for_request(request, *capabilities), name)

    @extend_schema(parameters=[PROJECT], responses=RunSerializer, summary="A run's grading policy")
    def get(self, request, name: str):
        run = self._run(request, name, Capability.VIEW, Capability.EXPORT)
        return Response(RunSerializer(run_with_step_count(run)).data)

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses=RunSerializer,
        summary="Change a run's grading policy (admin): baseline, auto_grade, grading_deadline_seconds, drop_policy, "
        "turn_weights, settle_identical",
    )
    def patch(self, request, name: str):
        run = self._run(request, name, Capability.MANAGE)
        body = _body(request)
        if isinstance(body, Response):
            return body
        try:
            run = update_run_policy(run=run, changes=body)
        except PolicyError as exc:
            return _policy_error(exc)
        return Response(RunSerializer(run_with_step_count(run)).data)


def _step(request, number: int, *capabilities: Capability) -> Step:
    return step_or_404(run_for_request(request, project_for_request(request, *capabilities)), number)


class StepStatusView(APIView):
    @extend_schema(
        parameters=[PROJECT, RUN],
        responses=StepStatusSerializer,
        summary="Grading status of a step: counts, whether its advantages are final, and the run's health warnings up to it",
    )
    def get(self, request, number: int):
        project = project_for_request(request, Capability.VIEW, Capability.EXPORT)
        step = step_or_404(run_for_request(request, project), number)
        data = dict(StepStatusSerializer(step_status(step).as_dict()).data)
        # The run's health as of this step: what a trainer reading the status should know before
        # it trains on the step (the collapse or hacking signature, a step not sum-preserving).
        health = run_health(step.run, active_mapping(step.run), last=step.number, project=project)
        data["warnings"] = [w.as_dict() for w in health.warnings]
        return Response(data)


class StepGradeView(APIView):
    parser_classes = [StrictJSONParser]

    @extend_schema(
        parameters=[PROJECT, RUN],
        request=OpenApiTypes.OBJECT,
        responses={202: StepGradingSerializer},
        summary="Start or restart grading the step's mixed groups that have no verdict from this grader (admin); "
        "without a backend, a run with a jury queues the members this desk runs and makes the jury's verdicts it can",
    )
    def post(self, request, number: int):
        step = _step(request, number, Capability.MANAGE)
        body = _body(request)
        if isinstance(body, Response):
            return body
        jury = step.run.jury if "backend" not in body else None  # the run's jury: its members grade
        backend = body.get("backend", step.run.auto_grade if step.run.auto_grade != Run.AutoGrade.NONE else "heuristic")
        if backend not in BACKENDS:
            return error(status.HTTP_400_BAD_REQUEST, f"backend must be one of {', '.join(BACKENDS)}", field="backend")
        try:
            jobs = queue_jury_step(step=step, jury=jury) if jury is not None else queue_step(step=step, backend=backend)
        except GraderUnavailable as exc:
            return error(status.HTTP_400_BAD_REQUEST, str(exc), field="backend")
        data = StepGradingSerializer({**step_status(step).as_dict(), "queued": len(jobs)}).data
        return Response(data, status=status.HTTP_202_ACCEPTED)


class RunMetricsView(APIView):
    """A run's step metrics: the trainer posts its scalars; anyone who may see the run reads them
    beside the desk's own figures and the warnings they raise (grading.health)."""

    parser_classes = [StrictJSONParser]

    @extend_schema(
        parameters=[
            PROJECT,
            OpenApiParameter("names", str, description="comma-separated trainer metrics to return; all when absent"),
            OpenApiParameter("from", int, description="first step"),
            OpenApiParameter("to", int, description="last step"),
        ],
        responses=OpenApiTypes.OBJECT,
        summary="A run's step metrics: the trainer's, the desk's own, and the warnings they raise",
    )
    def get(self, request, name: str):
        run = run_or_404(project_for_request(request, Capability.VIEW, Capability.EXPORT), name)
        query = request.query_params
        first = params.optional_whole(query.get("from"), "from")
        last = params.optional_whole(query.get("to"), "to")
        names = [n for n in query.get("names", "").split(",") if n] if "names" in query else None
        health = run_health(run, active_mapping(run), names=names, first=first, last=last)
        timeline = health.timeline
        return Response(
            {
                "run": run.name,
                "steps": timeline.steps,
                "trainer": {n: [[s, v] for s, v in series] for n, series in timeline.trainer.items()},
                "desk": {n: [[s, v] for s, v in series] for n, series in timeline.desk.items()},
                "warnings": [w.as_dict() for w in health.warnings],
            }
        )

    @extend_schema(
        parameters=[PROJECT],
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT, 200: OpenApiTypes.OBJECT},
        summary='Log a step\'s metrics: {"step": n, "metrics": {name: number}} or a list of them; '
        "idempotent per (run, step, name), a new value replacing the old",
    )
    def post(self, request, name: str):
        run = run_or_404(project_for_request(request, Capability.INGEST, Capability.EXPORT), name)
        try:
            values = parse_metrics(request.data)
        except MetricsError as exc:
            return error(status.HTTP_400_BAD_REQUEST, str(exc), field=exc.field)
        logged = record_metrics(run=run, values=values)
        created = logged.created > 0
        return Response({"run": run.name, **logged.as_dict()}, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
