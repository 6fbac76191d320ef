"""The cheat audit queue: every cheat signal with its evidence; confirm or overturn with a reason."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from grading.models import CheatDecision
from grading.projects.access import page_project
from reviews.selectors import desk as selectors
from reviews.services.audit import AuditError, audit_cheat

PER_PAGE = 50


def _status(request: HttpRequest) -> str:
    status = request.GET.get("status", "pending")
    return status if status in selectors.AUDIT_FILTERS else "pending"


@login_required
@require_GET
def audit_queue(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, "audit")
    status, source = _status(request), request.GET.get("source", "")
    # Signals on groups this auditor still judges blind stay out until they submit (grader fields).
    signals = selectors.audit_queue(project_obj, status=status, source=source, hidden_from=request.user)
    page = Paginator(signals, PER_PAGE).get_page(request.GET.get("page"))
    evidence = selectors.cheat_evidence(list(page))
    for decision in page:
        decision.evidence = evidence.get(decision.rollout_id, [])
    return render(request, "reviews/audit.html", {
        "project": project_obj, "membership": membership, "page": page, **_filters(request, project_obj, status, source),
    })


def _filters(request: HttpRequest, project, status: str, source: str) -> dict:
    """The status/source filter bar with its counts (the page, and the out-of-band swap after a decision)."""
    sources = CheatDecision.Source.choices
    return {"status": status, "source": source if source in dict(sources) else "",
            "counts": selectors.audit_counts(project, hidden_from=request.user),
            "statuses": list(selectors.AUDIT_FILTERS), "sources": sources}


@login_required
@require_POST
@vary_on_headers("HX-Request")
def decide(request: HttpRequest, project: str, pk: int) -> HttpResponse:
    project_obj, _ = page_project(request, project, "audit")
    decision = get_object_or_404(
        CheatDecision.objects.select_related("rollout__group__run", "rollout__group__task", "rollout__group__step")
        .exclude(rollout__group_id__in=selectors.open_blind_group_ids(project=project_obj, user=request.user)),
        pk=pk, rollout__group__run__project=project_obj,
    )
    verdict = request.POST.get("verdict")
    error = None
    if verdict not in ("confirm", "overturn"):
        error = "choose confirm or overturn"
    else:
        try:
            audit_cheat(decision=decision, auditor=request.user, confirmed=verdict == "confirm",
                        reason=request.POST.get("reason", ""))
        except AuditError as exc:
            error = str(exc)
    if request.htmx:
        decision = selectors.audit_queue(project_obj, status="all").get(pk=pk)
        decision.evidence = selectors.cheat_evidence([decision]).get(decision.rollout_id, [])
        # The row, and the filter bar's counts out of band, so they are not stale after a decision.
        back = request.POST.get("status", "pending")
        context = {"project": project_obj, "decision": decision, "error": error,
                   **_filters(request, project_obj, back if back in selectors.AUDIT_FILTERS else "pending",
                              request.POST.get("source", ""))}
        return render(request, "reviews/audit.html#audit-decided", context, status=422 if error else 200)
    if error:
        messages.error(request, f"Not recorded: {error}")
    else:
        messages.success(request, f"Cheat signal {'confirmed' if verdict == 'confirm' else 'overturned'}; advantages of step "
                                  f"{decision.rollout.group.step.number} are being recomputed.")
    # Back to the filters the auditor was on (status and source), as the htmx answer keeps them.
    status, source = request.POST.get("status", "pending"), request.POST.get("source", "")
    query = {"status": status if status in selectors.AUDIT_FILTERS else "pending"}
    if source in CheatDecision.Source.values:
        query["source"] = source
    return redirect(reverse("audit-queue", args=[project]) + "?" + urlencode(query))
