"""Blind comparisons between two runs or checkpoints: the list and the form that builds one
(admins), and one comparison's figures as people or a grader judged it. The API is
reviews.api.comparisons; the protocol is docs/user-guide.md#blind-comparisons-between-two-runs-or-checkpoints."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from grading.comparisons.services import DEFAULT_MAX_TASKS, DEFAULT_PER_SIDE, MAX_PER_SIDE, ComparisonError, create_comparison
from grading.formats import params
from grading.models import Capability
from grading.projects.access import get_project_for
from reviews.presenters.comparisons import figure_rows, form_body, side_runs
from reviews.selectors import campaigns as campaign_data
from reviews.selectors import comparisons as data


@login_required
@require_http_methods(["GET", "POST"])
def comparisons(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = get_project_for(request.user, project, Capability.VIEW)
    error = None
    if request.method == "POST":
        get_project_for(request.user, project, Capability.MANAGE)
        try:
            comparison = create_comparison(project=project_obj, body=form_body(request.POST), user=request.user)
        except ComparisonError as exc:
            error = f"{exc.field}: {exc}"
        else:
            n = data.group_count(comparison)
            messages.success(request, f"Comparison {comparison.name} stored: {n} cross-run group{'s' * (n != 1)}.")
            return redirect("comparison", project=project_obj.name, name=comparison.name)
    listed = data.comparison_list(project_obj)
    withheld = data.withheld_runs(project_obj, request.user)
    context = {
        "project": project_obj,
        "membership": membership,
        "comparisons": [(c, c.run_id in withheld) for c in listed],
        "runs": side_runs(project_obj) if Capability.MANAGE in membership.capabilities else [],
        "graders": campaign_data.offered_graders(project_obj) if Capability.MANAGE in membership.capabilities else [],
        "posted": request.POST if error else {},
        # the runs a side starts on: what was posted, or what a link asked (the timeline's "compare blind")
        "chosen": {side: (request.POST if error else request.GET).get(f"{side}_run", "") for side in ("a", "b")},
        "error": error,
        "defaults": {"per_side": DEFAULT_PER_SIDE, "max_tasks": DEFAULT_MAX_TASKS, "max_per_side": MAX_PER_SIDE},
    }
    return render(request, "reviews/comparisons.html", context, status=400 if error else 200)


@login_required
@require_GET
def comparison(request: HttpRequest, project: str, name: str) -> HttpResponse:
    project_obj, membership = get_project_for(request.user, project, Capability.VIEW)
    found = data.comparison_in(project_obj, name) if params.usable_name(name, max_len=100) else None
    if found is None:
        raise Http404("No such comparison")
    context: dict = {"project": project_obj, "membership": membership, "comparison": found}
    if data.withheld_from(found, request.user):
        context["withheld"] = True
        return render(request, "reviews/comparison.html", context)
    judges = data.judges(found)
    judge = request.GET.get("judge") or data.PEOPLE
    if judge not in judges:
        judge = data.PEOPLE
    report = data.report(found, judge, offered=judges)
    context |= {"judges": judges, "judge": judge, "report": report, "rows": figure_rows(report)}
    return render(request, "reviews/comparison.html", context)
