"""Pages of the store: projects -> runs -> steps (the group page is the review desk's,
reviews/views/group.py), and /healthz."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from grading.formats import params
from grading.jobs.policy import PolicyError, auto_grader_name, update_run_policy
from grading.method.selectors import late_cheat_credit
from grading.method.services.computation import refresh_stale_step, refresh_stale_steps
from grading.method.services.mappings import active_mapping
from grading.models import Capability, Run
from grading.presenters import charts, timeline
from grading.projects import create
from grading.projects.access import page_project, page_run, require_staff
from grading.selectors.graders import policy_graders, policy_juries
from grading.selectors.groups import GROUP_FILTERS, GROUP_ORDERS, groups_page
from grading.selectors.health import ping_database
from grading.selectors.imports import import_jobs
from grading.selectors.metrics import run_health
from grading.selectors.projects import projects_for_user
from grading.selectors.runs import comparison_of, credit_per_step, run_progress, runs_with_totals
from grading.selectors.steps import step_drops, step_for_page, step_totals, steps_page


@require_safe  # GET and HEAD: a load balancer's probe may be either
def healthz(request: HttpRequest) -> JsonResponse:
    """For load balancers and compose health checks: the one unauthenticated URL, so it says
    nothing beyond whether the database answers."""
    ping_database()
    return JsonResponse({"status": "ok"})


@login_required
@require_GET
def project_list(request: HttpRequest) -> HttpResponse:
    return render(request, "grading/projects.html", {"projects": projects_for_user(request.user)})


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def new_project(request: HttpRequest) -> HttpResponse:
    """Staff create a project and become its first admin; then its team page, to invite the others."""
    require_staff(request.user)
    values = {"name": "", "description": ""}
    if request.method == "POST":
        values = {key: request.POST.get(key, "") for key in values}
        try:
            project = create.create_project(admin=request.user, actor=request.user, **values)
        except create.ProjectError as exc:
            return render(request, "grading/new_project.html", {"values": values, "error": str(exc)}, status=422)
        messages.success(request, f"Project {project.name} created; you are its admin. Add or invite its team here.")
        return redirect("team", project=project.name)
    return render(request, "grading/new_project.html", {"values": values})


@login_required
@require_GET
def project_detail(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.VIEW)
    runs = runs_with_totals(project_obj)
    return render(request, "grading/project.html", {"project": project_obj, "membership": membership, "runs": runs})


@login_required
@require_GET
def run_detail(request: HttpRequest, project: str, run: str) -> HttpResponse:
    project_obj, membership, run_obj = page_run(request, project, run, Capability.VIEW)
    # A page of steps with their counts, and the chart over every step from the stored
    # summaries, one query each: a few queries whatever the run's size.
    page, steps = steps_page(run_obj, request.GET.get("page"))
    mapping = active_mapping(run_obj)
    refresh_stale_steps(steps=steps, mapping=mapping)  # a GET that writes: the page shows current figures
    credit = credit_per_step(run_obj, mapping)
    progress = run_progress(run_obj, mapping)
    numbers = [s.number for s in steps]
    late = late_cheat_credit(run_obj, read_first=numbers)
    health = run_health(run_obj, mapping, project=project_obj)
    return render(
        request,
        "grading/run.html",
        {
            "project": project_obj,
            "run": run_obj,
            "steps": steps,
            "step_rows": list(zip(steps, late.for_steps(numbers))),
            "late_credit": late,
            "page": page,
            "mapping": mapping,
            "credit_chart": charts.credit_chart(credit) if credit else None,
            "health_warnings": timeline.warning_rows(project_obj.name, run_obj.name, health.warnings),
            "n_metrics": len(health.timeline.trainer),
            "comparison": comparison_of(run_obj),
            **import_jobs(run_obj),
            "can_manage": Capability.MANAGE in membership.capabilities,
            "can_import": Capability.INGEST in membership.capabilities,
            "grader": auto_grader_name(run_obj),
            "caps": membership.capabilities,
            **progress,
            "baselines": Run.Baseline.choices,
            "auto_grades": policy_graders(run_obj) if Capability.MANAGE in membership.capabilities else [],
            "juries": policy_juries(run_obj) if Capability.MANAGE in membership.capabilities else [],
        },
    )


@login_required
@require_POST
def run_policy(request: HttpRequest, project: str, run: str) -> HttpResponse:
    """The run page's policy form (admin): baseline, auto-grading, its deadline, identical-patch
    settling and the jury."""
    project_obj, _, run_obj = page_run(request, project, run, Capability.MANAGE)
    deadline = request.POST.get("grading_deadline_seconds", "")
    changes: dict = {
        "baseline": request.POST.get("baseline", run_obj.baseline),
        "auto_grade": request.POST.get("auto_grade", run_obj.auto_grade),
        "grading_deadline_seconds": params.whole_or(
            deadline, "grading_deadline_seconds", default=deadline, maximum=params.MAX_INT
        ),
    }
    if "jury" in request.POST:  # "" for none, else "<name>@<version>" as the select offers it
        changes["jury"] = request.POST["jury"]
    if "settle_identical_shown" in request.POST:  # an unticked checkbox sends nothing: the marker says it was there
        changes["settle_identical"] = "settle_identical" in request.POST
    try:
        update_run_policy(run=run_obj, changes=changes)
    except PolicyError as exc:
        messages.error(request, f"Policy not changed: {exc}")
    else:
        messages.success(request, "Grading policy saved.")
    return redirect("run", project=project_obj.name, run=run_obj.name)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def run_imports(request: HttpRequest, project: str, run: str) -> HttpResponse:
    """The import jobs of the run page and the import page, polled by htmx every 2 s while one is queued or running."""
    project_obj, _, run_obj = page_run(request, project, run, Capability.VIEW)
    context = {"project": project_obj, "run": run_obj, **import_jobs(run_obj)}
    return render(request, "grading/run.html#import-jobs", context)


@login_required
@require_GET
def step_detail(request: HttpRequest, project: str, run: str, step: int) -> HttpResponse:
    project_obj, membership, run_obj = page_run(request, project, run, Capability.VIEW)
    step_obj = step_for_page(run_obj, step)
    show = request.GET.get("show", "all")
    if show not in GROUP_FILTERS:
        show = "all"
    order = request.GET.get("sort", "uid")
    if order not in GROUP_ORDERS:
        order = "uid"
    page = groups_page(step_obj, show=show, number=request.GET.get("page"), order=order)
    totals = step_totals(step_obj)
    mapping = active_mapping(run_obj)
    balance = refresh_stale_step(step=step_obj, mapping=mapping).summary  # a GET that writes, as on the run page
    return render(
        request,
        "grading/step.html",
        {
            "project": project_obj,
            "run": run_obj,
            "step": step_obj,
            "page": page,
            "show": show,
            "filters": list(GROUP_FILTERS),
            "order": order,
            "orders": GROUP_ORDERS,
            "totals": totals,
            "mapping": mapping,
            "balance": balance,
            "lambda_chart": charts.lambda_histogram(balance.get("lambdas", [])),
            "caps": membership.capabilities,
            "n_groups": totals["n_groups"],
            "n_mixed": totals["n_mixed"],
            "n_graded": balance.get("groups", {}).get("graded", 0),
            "drops": step_drops(step_obj, run_obj.drop_policy or {}),
        },
    )
