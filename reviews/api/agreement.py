"""GET /api/v1/agreement/: how far the grader agrees with people, with 95% intervals.

Blindness holds here too: a caller's own open blind groups are left out of every figure,
slice and trend (`withheld_open_blind_groups` says how many), since a step or repo slice
can hold little more than the group they are judging; and so, for those who may be served
groups blind and do not manage the project, are the groups the queue may still serve them
(`withheld_queued_groups`), or the figures would move by the group "judge next" hands them
(reviews.selectors.blind.withheld_groups). Nobody, whatever their role, gets the grader's
tiers on a group they judge blind."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import project_for_request, run_for_request
from grading.method.services.mappings import active_mapping
from grading.models import Capability
from reviews.selectors import calibration as data

MAX_BOOT = 5000


class AgreementView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("project", str, description="required with a session login; a token implies its project"),
            OpenApiParameter("run", str, description="one run; every run of the project when omitted"),
            OpenApiParameter(
                "grader",
                str,
                description="grader name@version (or a jury); when omitted, the run's policy grader, else the version "
                "that graded the most judged groups. Figures are always one version's, never several pooled",
            ),
            OpenApiParameter("step", int, description="one step number"),
            OpenApiParameter("n_boot", int, description=f"bootstrap resamples over groups (default 1000, at most {MAX_BOOT})"),
            OpenApiParameter("slices", bool, description="also per grader, step and repo (default false)"),
        ],
        responses={200: OpenApiTypes.OBJECT},
        summary="Grader–human agreement (exact, κ, α, τ-b, pairwise, top-1, cheat P/R/F1), the people-vs-people ceiling and "
        "the fitted mapping",
    )
    def get(self, request):
        project = project_for_request(request, Capability.VIEW, Capability.EXPORT)
        params = request.query_params
        run = run_for_request(request, project, required=False)
        step = params.get("step")
        if step is not None and not (step.isascii() and step.isdigit() and len(step) <= 10):  # '²'.isdigit() is True
            return error(status.HTTP_400_BAD_REQUEST, "invalid fields", fields={"step": ["a non-negative integer"]})
        n_boot = params.get("n_boot", str(data.N_BOOT))
        if not (n_boot.isascii() and n_boot.isdigit() and len(n_boot) <= 10) or not 0 <= int(n_boot) <= MAX_BOOT:
            return error(status.HTTP_400_BAD_REQUEST, "invalid fields", fields={"n_boot": [f"an integer 0..{MAX_BOOT}"]})
        n_boot = int(n_boot)
        # Every figure leaves out the groups withheld from the caller (docstring of
        # judgment_frames): a step or repo slice may hold little more than their own group.
        figures = data.figures(
            project=project,
            run=run,
            grader=params.get("grader") or None,
            step=int(step) if step is not None else None,
            hidden_from=request.user,
            n_boot=n_boot,
            with_slices=params.get("slices") in ("1", "true", "yes"),
        )
        body = {
            "project": project.name,
            "scope": {
                "run": run.name if run else None,
                "grader": params.get("grader") or None,
                "step": int(step) if step is not None else None,
            },
            "n_judged_rollouts": figures.n_judgments,
            "withheld_open_blind_groups": figures.withheld,
            "withheld_queued_groups": figures.withheld_queued,
            "grader": figures.grader,
            "graders": figures.graders,
            "grader_versions": figures.versions,
            "n_boot": n_boot,
            **figures.overall,
            "ceiling": figures.ceiling,
            "by_step": figures.trend,
            "fitted_mapping": {"bands": figures.fitted.bands(), **figures.fitted.to_dict()},
            "active_mapping": active_mapping(run).label if run else None,
        }
        if figures.slices is not None:
            body["slices"] = figures.slices
        return Response(body)
