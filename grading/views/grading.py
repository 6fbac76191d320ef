"""The grader-run page of a step: queue grading, watch jobs (status, latency, tokens, errors)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from grading.http import HtmxHttpRequest
from grading.jobs.grade import queue_step
from grading.models import Capability
from grading.projects.access import page_run
from grading.registry.backends import BACKENDS, GraderUnavailable
from grading.selectors.grading_jobs import grading_job_counts, grading_jobs
from grading.selectors.steps import step_for_page
from grading.waits.progress import step_status


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def step_grading(request: HtmxHttpRequest, project: str, run: str, step: int) -> HttpResponse:
    project_obj, membership, run_obj = page_run(request, project, run, Capability.VIEW)
    step_obj = step_for_page(run_obj, step)
    if request.method == "POST":
        if Capability.MANAGE not in membership.capabilities:
            raise PermissionDenied("Only a project admin can start grading")
        backend = request.POST.get("backend", "heuristic")
        try:
            jobs = queue_step(step=step_obj, backend=backend)
        except GraderUnavailable as exc:
            messages.error(request, f"Grading not started: {exc}")
        else:
            messages.success(request, f"Queued {len(jobs)} mixed group{'s' if len(jobs) != 1 else ''} for the {backend} grader.")
        return redirect("step-grading", project=project_obj.name, run=run_obj.name, step=step_obj.number)
    jobs = grading_jobs(step_obj)
    counts = grading_job_counts(step_obj)
    context = {
        "project": project_obj,
        "run": run_obj,
        "step": step_obj,
        "jobs": jobs,
        "counts": counts,
        "active": counts["queued"] + counts["running"] > 0,
        "backends": BACKENDS,
        "can_grade": Capability.MANAGE in membership.capabilities,
        "status": step_status(step_obj),  # the numbers GET /api/v1/steps/{n}/ gives a trainer
    }
    template = "grading/grading.html#jobs" if request.htmx else "grading/grading.html"
    return render(request, template, context)
