"""Judging one group: submit, autosave a draft, reveal early, skip, compare patches, adjudicate."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.formats import date_format
from django.views.decorators.http import require_GET, require_POST

from grading.http import HtmxHttpRequest
from grading.models import Capability
from grading.projects.access import page_group
from reviews.access import get_assignment_for_reviewer
from reviews.forms import draft_fields, parse_judgment
from reviews.models import Judgment, Reveal
from reviews.presenters.group_page import group_page
from reviews.presenters.patch_compare import patch_comparison
from reviews.selectors.adjudication import AdjudicationRefused, adjudication_refusal, group_review
from reviews.selectors.browse import hides_verdict_when_browsing
from reviews.selectors.judge_panel import passing_indexes
from reviews.selectors.lanes import lanes_for
from reviews.selectors.queue import open_assignment
from reviews.services.browse import ClaimRefused, claim_blind, show_verdict
from reviews.services.judgments import (
    AssignmentFinished,
    JudgmentConflict,
    JudgmentError,
    log_reveal,
    reveal_early,
    save_adjudication_draft,
    save_draft,
    submit_judgment,
)
from reviews.services.queue import next_assignment, skip_assignment


def render_group_page(request: HttpRequest, group, membership, *, status: int, **refused) -> HttpResponse:
    """The group page again with what was refused (`errors` and the `form_data` sent, or a
    `conflict`), as the group page's own view shows it (reviews.views.group.render_group)."""
    page = group_page(user=request.user, group=group, membership=membership, query=request.GET, **refused)
    if page.browse_reveal is not None:
        log_reveal(group=group, user=request.user, verdict=page.browse_reveal, reason=Reveal.Reason.BROWSE)
    return render(request, "reviews/group.html", page.context(), status=status)


def _group_url(project: str, group) -> str:
    """The group page's address; `project`: the project's name, from this request's own."""
    return reverse("group", args=[project, group.run.name, group.uid])


def _seen_version(request: HttpRequest) -> int | None:
    try:
        return int(request.POST.get("seen_version", ""))
    except ValueError:
        return None


def _seconds(request: HttpRequest) -> int | None:
    try:
        value = int(request.POST.get("seconds_spent", ""))
    except ValueError:
        return None
    return value if 0 <= value < 7 * 24 * 3600 else None


def _concurrent_message(result) -> str | None:
    if not result.concurrent:
        return None
    who = ", ".join(sorted({j.reviewer.username for j in result.concurrent}))
    when = date_format(result.concurrent[-1].created_at, "H:i")
    return (
        f"Conflict: {who} submitted a judgment on this group while you were judging (last at {when} UTC). "
        "Both judgments are kept; if they disagree, the group goes to an adjudicator."
    )


def _to(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """Where the page goes next. The judge page submits through htmx (static/js/judge.js): it is
    told by HX-Redirect, so only a failure the server could not answer (a 503, a lost
    connection) stays on the page, which then keeps the form filled and offers a retry."""
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return HttpResponseRedirect(url)


@login_required
@require_POST
def submit(request: HtmxHttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    """Store the judgment; `then=next` (Submit and next, Shift+S) goes on to the next queued group."""
    assignment, membership = get_assignment_for_reviewer(request, project, run, uid)
    group = assignment.group
    if not group.to_judge:
        raise Http404("Only mixed groups and comparisons' groups are judged")
    lanes = lanes_for(user=request.user, group=group, assignment=assignment)
    data = lanes.form_to_storage(request.POST)  # a blind judge's `tier-C` is stored as `tier-<index>`
    try:
        items, note = parse_judgment(data, passing_indexes(group), lanes.names)
        result = submit_judgment(
            reviewer=request.user,
            group=group,
            items=items,
            note=note,
            seen_version=_seen_version(request),
            seconds_spent=_seconds(request),
            names=lanes.names,
        )
    except JudgmentError as error:
        if not request.htmx:
            return render_group_page(request, group, membership, status=422, errors=error.errors, form_data=data)
        if assignment.is_open:  # what they typed comes back as the draft, with the errors said above it
            try:
                save_draft(assignment=assignment, data=draft_fields(data))
            except (AssignmentFinished, ValueError):
                pass
        # In words that name the lane ("rollout C passed and needs a tier"), never a field name.
        messages.error(request, "The judgment was not stored: " + "; ".join(error.errors.values()))
        return _to(request, _group_url(project, group))
    except JudgmentConflict as conflict:
        if not request.htmx:
            return render_group_page(request, group, membership, status=409, conflict=conflict)
        messages.warning(request, f"Conflict: {conflict}. Your first judgment is kept unchanged; nothing was stored this time.")
        return _to(request, _group_url(project, group))
    message = _concurrent_message(result)
    if message:
        messages.warning(request, message)
    if request.POST.get("then") == "next":
        following = next_assignment(project=group.run.project, reviewer=request.user)
        if following is None:
            messages.success(request, f"Judgment of {group.uid} stored. Nothing left in your queue.")
            return _to(request, reverse("review-queue", args=[project]))
        messages.success(request, f"Judgment of {group.uid} stored. Next: {following.group.uid}.")
        return _to(request, _group_url(project, following.group))
    messages.success(request, "Judgment stored. The grader's verdict is shown next to yours.")
    return _to(request, _group_url(project, group))


@login_required
@require_POST
def claim(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    """ "Judge this group blind", from a group opened outside an assignment."""
    group, _ = page_group(request, project, run, uid, Capability.REVIEW)
    try:
        assignment = claim_blind(group=group, reviewer=request.user)
    except ClaimRefused as refused:
        messages.error(request, f"You cannot judge {group.uid} blind: {refused}.")
    else:
        messages.success(request, f"{group.uid} is yours to judge{' blind' if assignment.blind else ''}.")
    return redirect(_group_url(project, group))


@login_required
@require_POST
def show(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    """ "Show the grader's verdict", from a group opened outside an assignment: logged as a
    Reveal, and the group leaves the person's queue. Someone judging it blind reveals early instead."""
    group, membership = page_group(request, project, run, uid, Capability.VIEW)
    open_ = open_assignment(group=group, reviewer=request.user)
    if open_ is not None:
        reveal_early(assignment=open_)
    elif hides_verdict_when_browsing(membership):
        show_verdict(group=group, user=request.user)
    messages.info(request, "The grader's verdict is shown. This group will not be served to you to judge blind.")
    return redirect(_group_url(project, group))


@login_required
@require_POST
def draft(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    """Autosave: the judging form's fields, every few seconds while the reviewer works."""
    assignment, _ = get_assignment_for_reviewer(request, project, run, uid)
    if not assignment.is_open:
        return JsonResponse({"error": "this group is already judged or skipped"}, status=409)
    lanes = lanes_for(user=request.user, group=assignment.group, assignment=assignment)
    try:
        saved = save_draft(assignment=assignment, data=draft_fields(lanes.form_to_storage(request.POST)))
    except AssignmentFinished:  # the submit won the race against this autosave
        return JsonResponse({"error": "this group is already judged or skipped"}, status=409)
    except ValueError as error:
        return JsonResponse({"error": str(error)}, status=400)
    assert saved.draft_saved_at is not None  # save_draft sets it
    return JsonResponse({"saved_at": saved.draft_saved_at.isoformat()})


@login_required
@require_POST
def adjudication_draft(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    """Autosave of the adjudication form, for whoever may adjudicate the group now."""
    group, _ = page_group(request, project, run, uid, Capability.ADJUDICATE)
    refusal = adjudication_refusal(group=group, user=request.user, review=group_review(group))
    if refusal is not None:
        return JsonResponse({"error": refusal.message}, status=refusal.status)
    try:
        saved = save_adjudication_draft(group=group, user=request.user, data=draft_fields(request.POST))
    except ValueError as error:
        return JsonResponse({"error": str(error)}, status=400)
    return JsonResponse({"saved_at": saved.saved_at.isoformat()})


@login_required
@require_POST
def reveal(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    assignment, _ = get_assignment_for_reviewer(request, project, run, uid)
    if assignment.is_open:
        lanes = lanes_for(user=request.user, group=assignment.group, assignment=assignment)
        try:
            fields = draft_fields(lanes.form_to_storage(request.POST))
            if fields:  # keep what the reviewer had typed (the page sends the judging fields along)
                save_draft(assignment=assignment, data=fields)
        except AssignmentFinished:  # a submit from another tab finished it meanwhile: nothing left to reveal early
            return redirect(_group_url(project, assignment.group))
        reveal_early(assignment=assignment)
        messages.info(request, "Grader verdict revealed. Your judgment of this group will be recorded as not blind.")
    return redirect(_group_url(project, assignment.group))


@login_required
@require_POST
def skip(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    assignment, _ = get_assignment_for_reviewer(request, project, run, uid)
    try:
        skip_assignment(assignment=assignment)
    except ValueError as error:
        messages.error(request, str(error))
        return redirect(_group_url(project, assignment.group))
    messages.info(request, f"Skipped {assignment.group.uid}; it will not be served to you again.")
    return redirect("review-queue", project=project)


@login_required
@require_GET
def compare(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    """Patch of rollout `a` against rollout `b`, or against the gold patch (`b=gold`)."""
    group, _ = page_group(request, project, run, uid, Capability.VIEW)
    comparison = patch_comparison(user=request.user, group=group, a=request.GET.get("a", ""), b=request.GET.get("b", ""))
    if comparison is None:
        return render(request, "reviews/group.html#compare", {"compare_error": "Choose two patches of this group."}, status=400)
    return render(request, "reviews/group.html#compare", comparison.context())


@login_required
@require_POST
def adjudicate(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    group, membership = page_group(request, project, run, uid, Capability.ADJUDICATE)
    if not group.to_judge:
        raise Http404("Only mixed groups and comparisons' groups are adjudicated")
    # Refused before the form is even read (and again under the lock, in submit_judgment):
    # only where the queue says the group waits for an adjudicator, never by a party to it.
    # A settled group is left to submit_judgment's 409, which names who settled it.
    state = group_review(group)
    refusal = (
        None if state is not None and state.adjudicated else adjudication_refusal(group=group, user=request.user, review=state)
    )
    try:
        if refusal is not None:
            raise refusal
        items, note = parse_judgment(request.POST, passing_indexes(group))
        submit_judgment(
            reviewer=request.user,
            group=group,
            items=items,
            note=note,
            kind=Judgment.Kind.ADJUDICATION,
            reason=request.POST.get("reason", ""),
            seconds_spent=_seconds(request),
        )
    except AdjudicationRefused as refused:
        return render_group_page(request, group, membership, status=refused.status, errors={"adjudication": refused.message})
    except JudgmentError as error:
        return render_group_page(request, group, membership, status=422, errors=error.errors, form_data=request.POST)
    except JudgmentConflict as conflict:
        return render_group_page(request, group, membership, status=409, conflict=conflict)
    messages.success(request, "Adjudication stored: this is now the group's final ranking.")
    return redirect("adjudication-queue", project=project)
