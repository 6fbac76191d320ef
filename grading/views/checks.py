"""The project's check policy page: every member reads it; admins turn the grader's sandboxed
checks on or off and set their budget."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from grading.models import Capability
from grading.projects.access import page_project
from grading.registry.checks import (
    CheckPolicyError,
    check_settings_for,
    memory_ceiling_mb,
    sandbox_problem,
    save_check_policy,
)

FIELDS = ("max_checks", "seconds", "memory_mb")


@login_required
@require_http_methods(["GET", "POST"])
def check_policy(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.VIEW)
    can_edit = Capability.MANAGE in membership.capabilities
    error: tuple[str, str] | None = None
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Only a project admin can change the check policy")
        values = {name: request.POST.get(name, "").strip() for name in FIELDS}
        try:
            numbers = {}
            for name, raw in values.items():
                if not raw.isdigit() or len(raw) > 9:
                    raise CheckPolicyError(name, f"{name} must be a whole number")
                numbers[name] = int(raw)
            save_check_policy(project=project_obj, user=request.user, enabled=request.POST.get("enabled") == "on", **numbers)
        except CheckPolicyError as exc:
            error = (exc.field, str(exc))
        else:
            messages.success(request, "Check policy saved. Grading conversations started from now on use it.")
            return redirect("check-policy", project=project_obj.name)
    policy = check_settings_for(project_obj)
    posted = request.POST if error else {}
    return render(
        request,
        "grading/checks.html",
        {
            "project": project_obj,
            "can_edit": can_edit,
            "policy": policy,
            "values": {name: posted.get(name, getattr(policy, name)) for name in FIELDS},
            "enabled": (posted.get("enabled") == "on") if error else policy.enabled,
            "error": error,
            "sandbox_problem": sandbox_problem(),
            "memory_max_mb": memory_ceiling_mb(),
        },
        status=422 if error else 200,
    )
