"""The search page: a project's rollouts matching a query, grouped by group, each with its
hits (a highlighted snippet and a link to the turn, patch row or tests); and, for auditors
and admins, the button that turns the search into cheat signals."""

from __future__ import annotations

from itertools import groupby

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from grading.formats import params
from grading.method.tiers import TIERS
from grading.models import Capability, CheatDecision
from grading.projects.access import page_project
from grading.search.index import has_index
from grading.search.query import QueryError
from grading.search.selectors import CHEAT_FILTERS, COUNT_CAP, SQLITE_SCAN_ROWS, SearchRefused, search_rollouts
from reviews.presenters import search_links
from reviews.selectors.search import FIELDS, read_search, run_names, sees_grader
from reviews.services.search_signals import MAX_SIGNALS, SignalRefused, signal_search


@login_required
@require_GET
def search(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.VIEW)
    context = {
        "project": project_obj,
        "membership": membership,
        "form": {f: request.GET.get(f, "") for f in FIELDS},
        "runs": run_names(project_obj),
        "tiers": TIERS,
        "cheat_filters": CHEAT_FILTERS,
        "sees_grader": sees_grader(membership),
        "indexed": has_index(),
        "count_cap": COUNT_CAP,
        "scan_rows": SQLITE_SCAN_ROWS,
        "max_signals": MAX_SIGNALS,
        "can_signal": Capability.AUDIT in membership.capabilities,
    }
    if not request.GET.get("q"):
        return render(request, "reviews/search.html", context)
    try:
        found = read_search(request.GET, project=project_obj, membership=membership, user=request.user)
    except (QueryError, SearchRefused) as exc:
        return render(request, "reviews/search.html", {**context, "error": str(exc)}, status=422)
    after = params.whole_or(request.GET.get("cursor"), "cursor", default=None, maximum=params.MAX_ID)
    page = search_links.linked_page(
        search_rollouts(query=found.query, scope=found.scope, sees_grader=found.sees_grader, after=after)
    )
    groups = [(group, list(results)) for group, results in groupby(page.results, key=lambda r: r.rollout.group)]
    other_mode_url = "?" + urlencode({**found.params(), "mode": found.query.other_mode})
    next_url = None
    if page.next_cursor is not None:
        next_page: dict[str, str | int] = {**found.params(), "cursor": page.next_cursor}
        next_url = "?" + urlencode(next_page)
    return render(
        request,
        "reviews/search.html",
        {
            **context,
            "page": page,
            "groups": groups,
            "next_url": next_url,
            "query": found.query,
            "other_mode_url": other_mode_url,
            "first_url": "?" + urlencode(found.params()) if after else None,
            "signal_params": found.params(),
        },
    )


@login_required
@require_POST
def signal(request: HttpRequest, project: str) -> HttpResponse:
    """Turn the search in the form into open cheat signals (source `search`) on every matching rollout."""
    project_obj, membership = page_project(request, project, Capability.AUDIT)
    back = reverse("search", args=[project]) + "?" + urlencode({f: request.POST[f] for f in FIELDS if request.POST.get(f)})
    try:
        found = read_search(request.POST, project=project_obj, membership=membership, user=request.user)
        report = signal_search(search=found, auditor=request.user)
    except (QueryError, SearchRefused, SignalRefused) as exc:
        messages.error(request, f"No cheat signal created: {exc}")
        return redirect(back)
    text = f"{report.created} cheat signal{'s' if report.created != 1 else ''} created (source: search)"
    if report.skipped:
        text += f"; {report.skipped} rollout{'s' if report.skipped != 1 else ''} already had an open one from a search"
    messages.success(request, text + ".")
    return redirect(
        reverse("audit-queue", args=[project]) + "?" + urlencode({"status": "pending", "source": CheatDecision.Source.SEARCH})
    )
