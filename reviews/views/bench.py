"""The grader bench page: pick graders of a run, see them side by side against people
(admins and adjudicators). The figures are the compare API's (reviews.selectors.bench)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from grading.models import Capability
from grading.projects.access import get_project_for
from reviews.presenters.bench_page import bench_page
from reviews.selectors import bench as data


@login_required
@require_GET
def bench(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = get_project_for(request.user, project, Capability.MANAGE, Capability.ADJUDICATE)
    runs = data.bench_runs(project_obj)
    run = next((r for r in runs if r.name == request.GET.get("run")), runs[0] if runs else None)
    offered = data.run_graders(run, hidden_from=request.user) if run else []
    chosen = [g for g in request.GET.getlist("grader") if g in offered][: data.MAX_GRADERS]
    page = None
    if run and chosen:
        body = data.comparison(project=project_obj, run=run, graders=chosen, hidden_from=request.user)
        page = bench_page(body)
    context = {
        "project": project_obj,
        "membership": membership,
        "runs": runs,
        "run": run,
        "offered": offered,
        "chosen": chosen,
        "page": page,
        "max_graders": data.MAX_GRADERS,
    }
    return render(request, "reviews/bench.html", context)
