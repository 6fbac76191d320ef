"""The project's Health warnings page: what raises a run's warnings (grading.health.warnings).
Every member reads the thresholds; admins change them or reset them to the defaults."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from grading.health.services import set_health_thresholds
from grading.health.warnings import ThresholdsRefused, form_values, threshold_fields
from grading.models import Capability
from grading.projects.access import page_project
from grading.selectors.projects import health_thresholds

WARNINGS = {"all": "every signature", "collapse": "collapse", "hacking": "hacking", "credit_imbalance": "credit imbalance"}


@login_required
@require_http_methods(["GET", "POST"])
def health_thresholds_page(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.VIEW)
    can_edit = Capability.MANAGE in membership.capabilities
    fields = threshold_fields()
    errors: dict[str, str] = {}
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Only a project admin can change the health warnings' thresholds")
        reset = request.POST.get("action") == "reset"
        values = {} if reset else form_values(request.POST, [name for name, *_ in fields])
        try:
            set_health_thresholds(project=project_obj, user=request.user, values=values)
        except ThresholdsRefused as exc:
            errors = exc.errors
        else:
            done = "reset to the defaults" if reset else "saved"
            messages.success(request, f"Health warning thresholds {done}. Every run's warnings use them from now on.")
            return redirect("health-thresholds", project=project_obj.name)
    current = health_thresholds(project_obj)
    rows = [
        {
            "name": name,
            "warning": WARNINGS[warning],
            "unit": unit,
            "meaning": meaning,
            "default": str(default),
            "value": str(request.POST.get(name, "") if errors else getattr(current.thresholds, name)),
            "changed": name in current.changed,
            "error": errors.get(name),
        }
        for name, default, warning, unit, meaning in fields
    ]
    return render(
        request,
        "grading/health_thresholds.html",
        {
            "project": project_obj,
            "membership": membership,
            "can_edit": can_edit,
            "rows": rows,
            "current": current,
            "errors": errors,
        },
        status=422 if errors else 200,
    )
