"""The cheat audit queue: one row per rollout with all its signals; one decision settles it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from grading.http import HtmxHttpRequest
from grading.models import Capability, CheatDecision
from grading.projects.access import page_project
from reviews.selectors import audit as selectors
from reviews.selectors.scanners import own_scanners, scanner_report
from reviews.services.audit import AuditError, audit_rollouts

VERDICTS = {"confirm": True, "overturn": False}


def _context(request: HttpRequest, project, scope: selectors.AuditScope) -> dict:
    """The filter bar (with its counts) and the bulk bar: the page, and out of band after a decision."""
    return {
        "project": project,
        "scope": scope,
        "status": scope.status,
        "source": scope.source,
        "counts": selectors.audit_counts(project, hidden_from=request.user),
        "bulk": selectors.bulk_choices(project, hidden_from=request.user),
        "statuses": list(selectors.STATES),
        "sources": CheatDecision.Source.choices,
    }


def _rows(request: HttpRequest, project, scope: selectors.AuditScope):
    # Rollouts on groups this auditor still judges blind stay out until they submit (grader fields).
    return selectors.audit_page(project, scope=scope, number=request.GET.get("page"), hidden_from=request.user)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def audit_queue(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.AUDIT)
    scope = selectors.read_scope(request.GET)
    page, rows = _rows(request, project_obj, scope)
    return render(
        request,
        "reviews/audit.html",
        {
            "membership": membership,
            "page": page,
            "rows": rows,
            **_context(request, project_obj, scope),
        },
    )


@login_required
@require_GET
def scanners(request: HttpRequest, project: str) -> HttpResponse:
    """Each scanner version against the project's labeled rollouts (docs/scanners.md#validation-sets)."""
    project_obj, membership = page_project(request, project, Capability.AUDIT)
    report = scanner_report(project_obj, hidden_from=request.user)
    own = own_scanners(project_obj, hidden_from=request.user)
    return render(
        request, "reviews/audit_scanners.html", {"project": project_obj, "membership": membership, "report": report, "own": own}
    )


def _verdict(request: HttpRequest) -> bool:
    verdict = request.POST.get("verdict")
    if verdict not in VERDICTS:
        raise AuditError("choose confirm or overturn")
    return VERDICTS[verdict]


def _back(project: str, scope: selectors.AuditScope) -> HttpResponse:
    return redirect(reverse("audit-queue", args=[project]) + "?" + scope.query_string)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def decide(request: HtmxHttpRequest, project: str, rollout_id: int) -> HttpResponse:
    """Confirm or overturn one rollout: every open signal of it, with one reason."""
    project_obj, membership = page_project(request, project, Capability.AUDIT)
    if selectors.audit_rollout_for(project_obj, rollout_id, hidden_from=request.user) is None:
        raise Http404("no such rollout in the audit")
    scope = selectors.read_scope(request.POST)
    error, confirmed = None, None
    try:
        confirmed = _verdict(request)
        audit_rollouts(
            project=project_obj,
            rollout_ids=[rollout_id],
            auditor=request.user,
            confirmed=confirmed,
            reason=request.POST.get("reason", ""),
        )
    except AuditError as exc:
        error = str(exc)
    if request.htmx:
        rollout = selectors.audit_rollout_for(project_obj, rollout_id, hidden_from=request.user)
        assert rollout is not None  # found above, and deciding it keeps its signals
        row = selectors.audit_rows(project_obj, [rollout])[0]
        # Decided, the row leaves a "pending" list at once (a short line in its place); the
        # filter bar and bulk bar follow out of band.
        context = {
            "membership": membership,
            "row": row,
            "error": error,
            "left": error is None and scope.status != "all" and row.state != scope.status,
            **_context(request, project_obj, scope),
        }
        return render(request, "reviews/audit.html#audit-decided", context, status=422 if error else 200)
    if error:
        messages.error(request, f"Not recorded: {error}")
    else:
        messages.success(
            request,
            f"Rollout {'confirmed as a cheat' if confirmed else 'overturned'}; its step's advantages are being recomputed.",
        )
    return _back(project, scope)


@login_required
@require_POST
@vary_on_headers("HX-Request")
def decide_bulk(request: HtmxHttpRequest, project: str) -> HttpResponse:
    """Confirm or overturn every pending rollout of a prescreen rule or a search at once."""
    project_obj, membership = page_project(request, project, Capability.AUDIT)
    target = selectors.read_scope(request.POST)
    scope = selectors.read_scope({"status": request.POST.get("back_status"), "source": request.POST.get("back_source")})
    error, report = None, None
    try:
        confirmed = _verdict(request)
        if not target.rule and not target.search:
            raise AuditError("choose a prescreen rule or a search to decide in bulk")
        ids = selectors.bulk_targets(project_obj, scope=target, hidden_from=request.user)
        if ids is None:
            raise AuditError(f"more than {selectors.MAX_BULK} rollouts: decide them in smaller sets")
        if not ids:
            raise AuditError("no pending rollout has this signal any more")
        report = audit_rollouts(
            project=project_obj, rollout_ids=ids, auditor=request.user, confirmed=confirmed, reason=request.POST.get("reason", "")
        )
    except AuditError as exc:
        error = str(exc)
    done = (
        ""
        if report is None
        else (
            f"{report.rollouts} rollout{'s' * (report.rollouts != 1)} "
            f"{'confirmed' if confirmed else 'overturned'} ({report.signals} signals)"
        )
    )
    if request.htmx:
        page, rows = _rows(request, project_obj, scope)
        context = {
            "membership": membership,
            "page": page,
            "rows": rows,
            "bulk_error": error,
            "bulk_done": done,
            **_context(request, project_obj, scope),
        }
        return render(request, "reviews/audit.html#audit-table", context, status=422 if error else 200)
    if error:
        messages.error(request, f"Not recorded: {error}")
    else:
        messages.success(request, done + "; their steps' advantages are being recomputed.")
    return _back(project, scope)
