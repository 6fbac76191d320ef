"""The project's rubric guide page: every member reads it; admins edit it or reset it to the method's text."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from grading.method.guide import DEFAULT_GUIDE, GuideError
from grading.method.project_guides import guide_with_edit, reset_guide, save_guide
from grading.method.tiers import TIERS
from grading.models import Capability
from grading.projects.access import page_project


@login_required
@require_http_methods(["GET", "POST"])
def rubric_guide(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.VIEW)
    can_edit = Capability.MANAGE in membership.capabilities
    errors: dict[str, str] = {}
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Only a project admin can edit the rubric guide")
        if request.POST.get("action") == "reset":
            reset_guide(project=project_obj)
            messages.success(request, "Rubric guide reset to the method's default text.")
            return redirect("rubric-guide", project=project_obj.name)
        try:
            save_guide(project=project_obj, user=request.user, data=request.POST)
        except GuideError as error:
            errors = error.errors
        else:
            messages.success(request, "Rubric guide saved. The judge panel and the LLM grader's prompt use it from now on.")
            return redirect("rubric-guide", project=project_obj.name)
    guide, row = guide_with_edit(project_obj)
    posted = request.POST if errors else {}
    tiers = [
        {
            "code": t,
            "value": posted.get(f"tier-{t}", guide.tier(t)),
            "default": DEFAULT_GUIDE.tier(t),
            "error": errors.get(f"tier-{t}"),
        }
        for t in TIERS
    ]
    dimensions = [
        {
            "name": d.name,
            "label": d.label,
            "meaning": posted.get(f"meaning-{d.name}", d.meaning),
            "example": posted.get(f"example-{d.name}", d.example),
            "meaning_error": errors.get(f"meaning-{d.name}"),
            "example_error": errors.get(f"example-{d.name}"),
        }
        for d in guide.dimensions
    ]
    return render(
        request,
        "grading/guide.html",
        {
            "project": project_obj,
            "membership": membership,
            "can_edit": can_edit,
            "tiers": tiers,
            "dimensions": dimensions,
            "row": row,
            "errors": errors,
        },
        status=422 if errors else 200,
    )
