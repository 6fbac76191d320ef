"""The grader-run page of a step: queue grading, watch jobs (status, latency, tokens, errors)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from grading.grader.jobs import BACKENDS, GraderUnavailable, queue_step
from grading.grader.progress import step_status
from grading.models import GradingJob
from grading.projects.access import page_run


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def step_grading(request: HttpRequest, project: str, run: str, step: int) -> HttpResponse:
    project_obj, membership, run_obj = page_run(request, project, run, "view")
    step_obj = get_object_or_404(run_obj.steps, number=step)
    if request.method == "POST":
        if "manage" not in membership.capabilities:
            raise PermissionDenied("Only a project admin can start grading")
        backend = request.POST.get("backend", "heuristic")
        try:
            jobs = queue_step(step=step_obj, backend=backend)
        except GraderUnavailable as exc:
            messages.error(request, f"Grading not started: {exc}")
        else:
            messages.success(request, f"Queued {len(jobs)} mixed group{'s' if len(jobs) != 1 else ''} for the {backend} grader.")
        return redirect("step-grading", project=project_obj.name, run=run_obj.name, step=step_obj.number)
    jobs = list(
        GradingJob.objects.filter(group__step=step_obj).select_related("group", "verdict").order_by("grader", "group__uid")
    )
    counts = GradingJob.objects.filter(group__step=step_obj).aggregate(
        queued=Count("id", filter=Q(status=GradingJob.Status.QUEUED)),
        running=Count("id", filter=Q(status=GradingJob.Status.RUNNING)),
        done=Count("id", filter=Q(status=GradingJob.Status.DONE)),
        failed=Count("id", filter=Q(status=GradingJob.Status.FAILED)),
    )
    context = {
        "project": project_obj,
        "run": run_obj,
        "step": step_obj,
        "jobs": jobs,
        "counts": counts,
        "active": counts["queued"] + counts["running"] > 0,
        "backends": BACKENDS,
        "can_grade": "manage" in membership.capabilities,
        "status": step_status(step_obj),  # the numbers GET /api/v1/steps/{n}/ gives a trainer
    }
    template = "grading/grading.html#jobs" if request.htmx else "grading/grading.html"
    return render(request, template, context)
