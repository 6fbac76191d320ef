"""The group page: a group's rollouts side by side (diffs, turns, tests) with the review
desk's judge panel for this person, and the rollout partials it loads on demand. What
they show is read and assembled by reviews.presenters.group_page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_cache_control
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers

from grading.http import HtmxHttpRequest
from grading.models import Capability, Group
from grading.projects.access import page_group
from grading.registry.workspaces import queue_fetch
from reviews.models import Reveal
from reviews.presenters import files_view
from reviews.presenters.group_page import GroupPage, group_page, parts
from reviews.services.judgments import log_reveal

NO_SUCH_ROLLOUT = "No such rollout in this group"


def render_group(request: HttpRequest, group: Group, page: GroupPage, *, status: int = 200) -> HttpResponse:
    """The group page from its view model; the first showing of a verdict to a person
    browsing is logged as a reveal (reviews.views.judge shows a refused judgment alike)."""
    if page.browse_reveal is not None:
        log_reveal(group=group, user=request.user, verdict=page.browse_reveal, reason=Reveal.Reason.BROWSE)
    return render(request, "reviews/group.html", page.context(), status=status)


@login_required
@require_GET
def group_detail(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    group, membership = page_group(request, project, run, uid, Capability.VIEW)
    page = group_page(user=request.user, group=group, membership=membership, query=request.GET)
    return render_group(request, group, page)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def rollout_diff(request: HtmxHttpRequest, project: str, run: str, uid: str, lane: str) -> HttpResponse:
    group, _ = page_group(request, project, run, uid, Capability.VIEW)
    if request.GET.get("format") == "raw":  # the whole text, as data: never rendered by the browser
        found = parts.raw_patch(user=request.user, group=group, lane=lane)
        if found is None:
            raise Http404(NO_SUCH_ROLLOUT)
        key, patch = found
        response = HttpResponse(patch, content_type="text/plain; charset=utf-8")
        response["X-Content-Type-Options"] = "nosniff"
        disposition = content_disposition_header(True, f"rollout-{key}.patch")
        assert disposition is not None  # an attachment always has one
        response["Content-Disposition"] = disposition
        patch_cache_control(response, private=True, no_store=True)
        return response
    view = "split" if request.GET.get("view") == "split" else "unified"
    part = parts.diff_part(user=request.user, group=group, lane=lane, view=view)
    if part is None:
        raise Http404(NO_SUCH_ROLLOUT)
    template = "reviews/group.html#rollout-diff" if request.htmx else "reviews/rollout_part.html"
    return render(request, template, part.context())


@login_required
@require_GET
@vary_on_headers("HX-Request")
def rollout_extra_files(request: HtmxHttpRequest, project: str, run: str, uid: str, lane: str) -> HttpResponse:
    """The diffs of a lane's scratch files, which its patch lists behind "+N extra files"."""
    group, _ = page_group(request, project, run, uid, Capability.VIEW)
    view = "split" if request.GET.get("view") == "split" else "unified"
    part = parts.extra_files_part(user=request.user, group=group, lane=lane, view=view)
    if part is None:
        raise Http404(NO_SUCH_ROLLOUT)
    template = "reviews/group.html#rollout-extra-files" if request.htmx else "reviews/rollout_part.html"
    return render(request, template, part.context())


@login_required
@require_GET
@vary_on_headers("HX-Request")
def rollout_turns(request: HtmxHttpRequest, project: str, run: str, uid: str, lane: str) -> HttpResponse:
    group, _ = page_group(request, project, run, uid, Capability.VIEW)
    try:
        start = max(0, int(request.GET.get("start", 0)))
    except ValueError:
        start = 0
    query = request.GET.get("q", "").strip()
    try:
        part = parts.turns_part(user=request.user, group=group, lane=lane, start=start, query=query)
    except parts.TurnQueryTooLong:
        return HttpResponse(
            f"q: a search within a rollout is at most {parts.TURN_QUERY_CHARS} characters (got {len(query):,}).",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    if part is None:
        raise Http404(NO_SUCH_ROLLOUT)
    template = "reviews/group.html#rollout-turns" if request.htmx else "reviews/rollout_part.html"
    return render(request, template, part.context())


@login_required
@require_GET
@vary_on_headers("HX-Request")
def rollout_log(request: HtmxHttpRequest, project: str, run: str, uid: str, lane: str) -> HttpResponse:
    group, _ = page_group(request, project, run, uid, Capability.VIEW)
    part = parts.log_part(user=request.user, group=group, lane=lane)
    if part is None:
        raise Http404(NO_SUCH_ROLLOUT)
    template = "reviews/group.html#rollout-log" if request.htmx else "reviews/rollout_part.html"
    return render(request, template, part.context())


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def rollout_files(request: HtmxHttpRequest, project: str, run: str, uid: str, lane: str) -> HttpResponse:
    """The lane's files view: `?path=` (a file or directory, the root by default), `?at=base`
    for the task's base commit instead of the rollout's state, `?line=` to open a file at. A
    POST (project admins) fetches a repository not fetched yet, in the background."""
    group, membership = page_group(request, project, run, uid, Capability.VIEW)
    can_fetch = Capability.MANAGE in membership.capabilities
    if request.method == "POST":
        if not can_fetch:
            raise PermissionDenied("Only a project admin can fetch a repository")
        queue_fetch(group.task)
    query = request.GET
    path = query.get("path", "")
    if len(path) > files_view.MAX_PATH:
        message = f"path: at most {files_view.MAX_PATH} characters."
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    line = query.get("line", "")
    part = files_view.files_part(
        user=request.user,
        group=group,
        lane=lane,
        at="base" if query.get("at") == "base" else "rollout",
        path=path,
        line=int(line) if line.isascii() and line.isdigit() and len(line) < 10 else None,
        can_fetch=can_fetch,
    )
    if part is None:
        raise Http404(NO_SUCH_ROLLOUT)
    template = "reviews/group.html#rollout-files" if request.htmx else "reviews/rollout_part.html"
    return render(request, template, part.context())
