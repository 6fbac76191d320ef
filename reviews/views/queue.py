"""The review queue (next group, my progress, the team's), its policy, and the adjudication queue."""

from __future__ import annotations

import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from grading.models import Capability, Run
from grading.projects.access import page_project
from reviews.presenters.queue_page import adjudication_page, queue_page, run_filter
from reviews.services.judgments import reveal_disagreements
from reviews.services.queue import next_assignment, update_policy


def _run_filter(project, request: HttpRequest) -> Run | None:
    return run_filter(project, request.GET.get("run") or request.POST.get("run") or "")


@login_required
@require_GET
def queue(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.REVIEW)
    run = _run_filter(project_obj, request)
    page = queue_page(project=project_obj, membership=membership, reviewer=request.user, run=run)
    return render(request, "reviews/queue.html", page.context())


@login_required
@require_POST
def next_group(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, _ = page_project(request, project, Capability.REVIEW)
    run = _run_filter(project_obj, request)
    assignment = next_assignment(project=project_obj, reviewer=request.user, run=run)
    if assignment is None:
        messages.info(request, "Nothing left in your queue: every mixed group has its reviewers, or you have seen it.")
        return redirect(reverse("review-queue", args=[project]) + (f"?run={run.name}" if run else ""))
    group = assignment.group
    return redirect("group", project=project, run=group.run.name, uid=group.uid)


@login_required
@require_POST
def policy(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, _ = page_project(request, project, Capability.MANAGE)
    try:
        overlap = float(request.POST.get("overlap_percent", "")) / 100
        lease = int(request.POST.get("lease_minutes", ""))
        # What a blind judge is not shown of a rollout: the two checkboxes and the metadata words.
        words = [w for w in re.split(r"[\s,]+", request.POST.get("blind_metadata", "").strip().lower()) if w]
        fields = [name for name in ("source", "cost") if request.POST.get(f"blind_{name}") == "on"]
        update_policy(
            project=project_obj,
            overlap=overlap,
            blind=request.POST.get("blind") == "on",
            disagreements_first=request.POST.get("disagreements_first") == "on",
            lease_minutes=lease,
            blind_fields=fields + [f"metadata:{w}" for w in words],
        )
    except ValueError as error:
        messages.error(request, f"Policy not changed: {error}")
    else:
        messages.success(request, "Review policy saved.")
    return redirect("review-queue", project=project)


@login_required
@require_GET
def adjudication_queue(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.VIEW)
    if Capability.ADJUDICATE not in membership.capabilities:
        raise PermissionDenied("Adjudication needs the adjudicator or admin role")
    include_done = request.GET.get("show") == "all"
    page, rows, totals = adjudication_page(project=project_obj, include_done=include_done, number=request.GET.get("page"))
    # Withheld where this person judges blind; logged as a reveal where the grader is named.
    page.object_list = reveal_disagreements(user=request.user, reviews=rows)
    return render(
        request,
        "reviews/adjudication.html",
        {"project": project_obj, "membership": membership, "page": page, "include_done": include_done, "totals": totals},
    )
