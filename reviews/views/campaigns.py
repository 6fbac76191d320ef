"""The campaigns page of the grader bench (admins): start a built-in grader on a step, a run
or the judged groups, and watch each campaign's progress, tokens, cost and latency (the
list refreshes while one runs). The API is reviews.api.campaigns."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from grading.http import HtmxHttpRequest
from grading.jobs.campaigns import CampaignError, cancel_campaign
from grading.models import Capability
from grading.projects.access import get_project_for
from reviews.selectors import campaigns as data
from reviews.services.campaigns import start


def _body(post) -> dict:
    """The form as the API's body: {"grader", "scope": {"run"?, "step"?, "judged"?}}."""
    scope: dict = {}
    if post.get("run"):
        scope["run"] = post["run"]
    step = post.get("step", "").strip()
    if step:
        scope["step"] = int(step) if step.isascii() and step.isdigit() and len(step) <= 10 else step
    if post.get("judged"):
        scope["judged"] = True
    return {"grader": post.get("grader", ""), "scope": scope}


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def campaigns(request: HtmxHttpRequest, project: str) -> HttpResponse:
    project_obj, membership = get_project_for(request.user, project, Capability.MANAGE)
    if request.method == "POST":
        try:
            campaign = start(project=project_obj, body=_body(request.POST), user=request.user)
        except CampaignError as exc:
            messages.error(request, f"Campaign not started: {exc.field}: {exc}")
        else:
            groups = f"{campaign.total} mixed group{'s' if campaign.total != 1 else ''}"
            messages.success(
                request, f"Campaign #{campaign.pk} of {campaign.grader}: {groups}, {campaign.skipped_existing} graded before."
            )
        return redirect("grader-campaigns", project=project_obj.name)
    listed = data.campaign_list(project_obj)
    context = {
        "project": project_obj,
        "membership": membership,
        "campaigns": listed,
        "active": any(c.is_active for c in listed),
        "graders": data.offered_graders(project_obj),
        "runs": data.project_runs(project_obj),
    }
    return render(request, "reviews/campaigns.html#campaigns" if request.htmx else "reviews/campaigns.html", context)


@login_required
@require_POST
def cancel(request: HtmxHttpRequest, project: str, pk: int) -> HttpResponse:
    project_obj, _ = get_project_for(request.user, project, Capability.MANAGE)
    campaign = data.campaign_in(project_obj, pk)
    if campaign is None:
        messages.error(request, f"No campaign {pk} in {project_obj.name}.")
    elif cancel_campaign(campaign):
        messages.success(request, f"Campaign #{pk} cancelled.")
    else:
        messages.error(request, f"Campaign #{pk} had ended ({campaign.status}).")
    return redirect("grader-campaigns", project=project_obj.name)
