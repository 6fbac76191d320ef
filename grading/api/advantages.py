"""GET /api/v1/advantages/: redistributed advantages for trainers, streamed.

The URL's view is `advantage_export`, an async view around the DRF view: a request that has
to wait for its step leaves the DRF view holding a waiter slot (a `PendingWait`), waits
outside it, and is then served by the DRF view's own code. Under ASGI the wait holds no
thread and no database connection (grading/waits/watch.py); under WSGI it polls in the
request's thread, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import connections
from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import project_for_request, request_token, run_for_request
from grading.formats import params
from grading.method import export
from grading.method.releases import Taken, take_step, taken_step
from grading.method.services.computation import refresh_stale_steps
from grading.method.services.mappings import resolve_mapping
from grading.models import Capability, FactorMapping, Step
from grading.selectors.steps import steps_of_run
from grading.waits.progress import MAX_WAIT_SECONDS, StepStatus, step_status, wait_until_final
from grading.waits.waiters import WaitersFull, release_waiter_slot, take_waiter_slot
from grading.waits.watch import step_watcher


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
            OpenApiParameter(
                "wait",
                int,
                description=f"with step: answer as soon as the step is final, or after this many "
                f"seconds (0-{MAX_WAIT_SECONDS}); see the Gagar-Step-Final header. "
                "Waiters are capped per token, per project and in all: past a cap "
                "the answer is 429 with Retry-After",
            ),
            OpenApiParameter(
                "inputs_version",
                int,
                description="with step: the rows served earlier at this inputs version, "
                "byte for byte (the Gagar-Inputs-Version header of that answer)",
            ),
            OpenApiParameter(
                "turn_weights",
                int,
                enum=[0, 1],
                description="1: each row ends with a turn_weights column, the rollout's turn weights per message "
                "index for per-token advantages (docs/method.md §9); only for a run with "
                "turn_weights on. 0 (default): the rows without it, as before",
            ),
            OpenApiParameter("project", str, description="required with a session login; a token implies its project"),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.BINARY,
            (200, "text/csv"): OpenApiTypes.BINARY,
            (200, "application/vnd.apache.parquet"): OpenApiTypes.BINARY,
        },
        summary="Export gagar-advantage/1 rows (one per rollout)",
    )
    def get(self, request):
        project = project_for_request(request, Capability.EXPORT)
        fmt = request.query_params.get("format", "jsonl")
        if fmt not in export.FORMATS:
            return error(status.HTTP_400_BAD_REQUEST, f"format must be one of {', '.join(export.FORMATS)}")
        run = run_for_request(request, project)
        query = request.query_params
        step = params.optional_whole(query.get("step"), "step")  # ParamError: a JSON 400 (grading.api.errors)
        wait = params.optional_whole(query.get("wait"), "wait", maximum=MAX_WAIT_SECONDS)
        version = params.optional_whole(query.get("inputs_version"), "inputs_version")
        weights = bool(params.optional_whole(query.get("turn_weights"), "turn_weights", maximum=1))
        if weights and not run.turn_weights:
            return error(
                status.HTTP_400_BAD_REQUEST,
                f"run {run.name!r} gives no turn weights: turn them on with PATCH "
                f'/api/v1/runs/{run.name}/ {{"turn_weights": true}}',
                field="turn_weights",
            )
        for name, value in (("wait", wait), ("inputs_version", version)):
            if value is not None and step is None:
                return error(
                    status.HTTP_400_BAD_REQUEST, f"query parameter {name!r} needs 'step' (one step at a time)", field=name
                )
        steps = steps_of_run(run, number=step)
        if step is not None and not steps:
            return error(status.HTTP_404_NOT_FOUND, f"run {run.name!r} has no step {step}")
        try:
            mapping = resolve_mapping(run, request.query_params.get("mapping"))
        except FactorMapping.DoesNotExist as exc:
            return error(status.HTTP_404_NOT_FOUND, str(exc) or "no such mapping")
        stem = f"{run.name}-{f'step{step}' if step is not None else 'all'}-{mapping.label}".replace("@", "_v")
        headers = {
            "X-Gagar-Mapping": mapping.label,
            "Content-Disposition": content_disposition_header(as_attachment=True, filename=f"{stem}.{fmt}"),
        }
        if step is not None:
            token = request_token(request)
            holder = f"token:{token.pk}" if token else f"user:{request.user.pk}"
            try:
                return self._one_step(
                    steps[0],
                    mapping,
                    fmt,
                    wait=wait,
                    version=version,
                    headers=headers,
                    waiter=(project, holder),
                    turn_weights=weights,
                )
            except WaitersFull as exc:
                refused = error(status.HTTP_429_TOO_MANY_REQUESTS, str(exc), field="wait")
                refused["Retry-After"] = str(exc.retry_after)
                return refused
        computations = refresh_stale_steps(steps=steps, mapping=mapping)
        headers["Gagar-Inputs-Versions"] = ", ".join(f"{s.number}:{computations[s.pk].inputs_version}" for s in steps)
        if fmt == "parquet":
            response = FileResponse(
                export.parquet_file(steps, mapping, turn_weights=weights), content_type=export.CONTENT_TYPES[fmt]
            )
        else:
            stream = (
                export.jsonl_stream(steps, mapping, turn_weights=weights)
                if fmt == "jsonl"
                else export.csv_stream(steps, mapping, turn_weights=weights)
            )
            response = StreamingHttpResponse(stream, content_type=export.CONTENT_TYPES[fmt])
        for key, value in headers.items():
            response[key] = value
        return response

    def _one_step(
        self,
        step: Step,
        mapping: FactorMapping,
        fmt: str,
        *,
        wait: int | None,
        version: int | None,
        headers: dict,
        waiter: tuple,
        turn_weights: bool = False,
    ) -> HttpResponse:
        """A trainer's request: serve (and keep) the bytes of the step's inputs version, or, when
        it asked to wait and the step is not final, a PendingWait holding a waiter slot (raises
        WaitersFull past a cap): `advantage_export` waits, then serves it with `_serve`.
        """
        state: StepStatus = step_status(step)
        if wait and not state.final:
            project, holder = waiter
            slot = take_waiter_slot(project=project, holder=holder, seconds=wait)
            # Served after the wait, outside DRF's dispatch: finalize_response renders a JSON error
            # and adds DRF's headers, as dispatch would have.
            return PendingWait(
                step=step,
                seconds=wait,
                slot=slot,
                # djangorestframework-stubs want a Response; finalize_response takes any HttpResponse.
                serve=lambda: self.finalize_response(
                    self.request,
                    self._serve(  # type: ignore[arg-type]
                        step, mapping, fmt, state=step_status(step), version=version, headers=headers, turn_weights=turn_weights
                    ),
                ),
            )
        return self._serve(step, mapping, fmt, state=state, version=version, headers=headers, turn_weights=turn_weights)

    def _serve(
        self,
        step: Step,
        mapping: FactorMapping,
        fmt: str,
        *,
        state: StepStatus,
        version: int | None,
        headers: dict,
        turn_weights: bool = False,
    ) -> HttpResponse:
        if version is not None and version != state.inputs_version:
            taken = taken_step(step=step, mapping=mapping, fmt=fmt, inputs_version=version, turn_weights=turn_weights)
            if taken is None:
                return error(
                    status.HTTP_404_NOT_FOUND,
                    f"step {step.number} was never served at inputs_version {version} in {fmt} under {mapping.label}; "
                    f"its current inputs_version is {state.inputs_version}",
                    field="inputs_version",
                )
        else:
            taken = take_step(step=step, mapping=mapping, fmt=fmt, final=state.final, turn_weights=turn_weights)
            if version is not None and taken.inputs_version != version:  # the inputs moved on while it was computed
                taken = (
                    taken_step(step=step, mapping=mapping, fmt=fmt, inputs_version=version, turn_weights=turn_weights) or taken
                )
        return _taken_response(taken, state, fmt, headers)


class PendingWait(HttpResponse):
    """What the DRF view answers when the request has to wait: the step, how long, the waiter
    slot it holds and how to serve it after; never sent (`advantage_export` replaces it)."""

    def __init__(self, *, step: Step, seconds: int, slot: int, serve: Callable[[], HttpResponse]):
        super().__init__(status=status.HTTP_202_ACCEPTED)
        self.step, self.seconds, self.slot, self.serve = step, seconds, slot, serve

    async def answer(self, *, in_event_loop: bool) -> HttpResponse:
        """Wait until the step is final or `seconds` passed, give the slot back, serve."""
        try:
            if in_event_loop:
                # Nothing is held while waiting: the request thread's connection goes back
                # (to the pool) and the process's one watcher polls for every waiter.
                await sync_to_async(connections.close_all)()
                await step_watcher().until_final(self.step.pk, seconds=self.seconds)
            else:
                await sync_to_async(wait_until_final)(self.step, seconds=self.seconds)
        finally:
            # Also when the client went away mid-wait (Django cancels the view): the slot is freed.
            await asyncio.shield(sync_to_async(release_waiter_slot)(self.slot))
        return await sync_to_async(self.serve)()


_drf_advantage_export = AdvantageExportView.as_view()


async def advantage_export(request, *args, **kwargs):
    """The DRF view (authentication, checks, a waiter slot) in a thread; a wait in between."""
    view = asyncio.ensure_future(sync_to_async(_drf_advantage_export)(request, *args, **kwargs))
    try:
        response = await asyncio.shield(view)
    except asyncio.CancelledError:
        # The client went away while the view ran in its thread. The thread runs on (a thread
        # cannot be stopped) and may take a waiter slot after the hang-up: once it is done (it
        # never waits), that slot is given back, or it would stay taken until it expires.
        try:
            taken = await asyncio.shield(view)
        except Exception:  # noqa: BLE001  the view's own error, after the hang-up: nobody is left to answer
            taken = None
        if isinstance(taken, PendingWait):
            await asyncio.shield(sync_to_async(release_waiter_slot)(taken.slot))
        raise
    if isinstance(response, PendingWait):
        response = await response.answer(in_event_loop=isinstance(request, ASGIRequest))
    return response


# drf-spectacular and the CSRF middleware read the DRF view's attributes from the URL's callback.
advantage_export.__dict__.update({k: v for k, v in _drf_advantage_export.__dict__.items() if k != "__wrapped__"})


def _taken_response(taken: Taken, state: StepStatus, fmt: str, headers: dict) -> HttpResponse:
    response = HttpResponse(taken.body, content_type=export.CONTENT_TYPES[fmt])
    for key, value in headers.items():
        response[key] = value
    # Final describes the step now; the rows are those of the inputs version named beside it.
    response["Gagar-Step-Final"] = "true" if state.final else "false"
    response["Gagar-Inputs-Version"] = str(taken.inputs_version)
    response["Gagar-Step-Counts"] = state.header
    return response
