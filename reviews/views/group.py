"""The group page: a group's rollouts side by side (diffs, turns, tests) with the review
desk's judge panel for this person, and the rollout partials it loads on demand."""

from __future__ import annotations

from dataclasses import replace

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.utils.html import escape
from django.utils.http import content_disposition_header, urlencode
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from grading import selectors
from grading.formats import params
from grading.method.partial import drop_of
from grading.method.project_guides import guide_for
from grading.method.tiers import TIERS
from grading.method.turn_weights import CATEGORY_WORDS
from grading.models import Group, RolloutContent
from grading.projects.access import page_group
from grading.rollouts.diffs import HighlightBudget, parse_patch
from grading.rollouts.invisible import INVISIBLE, find_invisible
from grading.rollouts.patch_files import COLLAPSED, order_files
from grading.rollouts.turns import find_turns, fold_head, to_turns
from grading.search.query import QueryError, parse_query
from grading.templatetags.gagar import patch_anchor, path_key, visible_html
from reviews.forms import draft_fields
from reviews.models import AdjudicationDraft, Judgment, Reveal
from reviews.selectors.blind import needs_browse_reveal
from reviews.selectors.judge_panel import grader_says, start_rankings
from reviews.selectors.lanes import Lanes, lanes_for, withhold_on_page
from reviews.selectors.overview import cluster_labels, lane_order, rollout_test_counts
from reviews.selectors.queue import queue_place
from reviews.selectors.review_context import items_from_fields, review_context
from reviews.services.browse import browse_choice
from reviews.services.judgments import RUBRIC, log_reveal

TURNS_PER_PAGE = 40
# Patches highlighted inline on a group page: one rollout's up to DIFF_INLINE_CHARS, all of
# them together up to DIFF_PAGE_CHARS; larger ones load when asked (benchmarks/group_page.py).
DIFF_INLINE_CHARS = 40_000
DIFF_PAGE_CHARS = 120_000
# One diff partial renders at most DIFF_PARTIAL_ROWS lines and DIFF_PARTIAL_CHARS characters
# of a patch (a 200k-line patch was 42 MB of HTML in 17.7 s); the whole text is offered as a
# plain-text download (?format=raw). Highlighting within that has diffs.HighlightBudget's limits.
DIFF_PARTIAL_ROWS = 8_000
DIFF_PARTIAL_CHARS = 500_000
LOG_PREVIEW_CHARS = 200_000
TURN_QUERY_CHARS = 200  # a search within one rollout's turns (a substring; never a pattern)


def _ln(number: int | None) -> str:
    return "" if number is None else str(number)


def _row_id(lane: str, key: str, new_no: int | None) -> str:
    """The anchor evidence links point at (patch_anchor), on rows with a new-side line."""
    return f' id="p{lane}-{key}-{new_no}"' if new_no else ""


def _diff_tables(parsed, lane: str, view: str, extra_files=()) -> list[tuple]:
    """(file, table HTML, kind) for every file of a parsed patch, in the unified or split
    view, core change first and the agent's scratch files last (grading.rollouts.patch_files:
    the template collapses those behind "+N extra files"). `extra_files`: the rollout's
    cluster's (Rollout.extra_files).

    Built here rather than by a template loop over every row: the same markup at a tenth
    of the cost (a group page holds thousands of diff rows). Each table is marked safe
    because every piece of it is escaped: the code cells are pygments' output, which
    escapes every source character it emits, or the line through html.escape() where the
    highlighting budget stopped; hunk headers and budget notes go through escape(); the rest
    are line numbers, fixed class names and a hex digest of the path. Nothing else from a
    rollout is ever marked safe.
    """
    tables = []
    shown = visible_html if INVISIBLE.search(parsed.raw or "") else (lambda html: html)  # bidi / zero-width as ⟨U+…⟩
    for kind, file in order_files(parsed.files, extra_files=extra_files or ()):
        key = path_key(file.path)
        if view == "split":
            out = ['<table class="diff split hl">\n<colgroup><col class="ln"><col><col class="ln"><col></colgroup>\n']
            for hunk in file.hunks:
                out.append(f'<tr class="hunk"><td colspan="4">{shown(escape(hunk.header))}</td></tr>\n')
                if hunk.note:  # why its text is shown unhighlighted (diffs.HighlightBudget)
                    out.append(f'<tr class="hunk note"><td colspan="4">{escape(hunk.note)}</td></tr>\n')
                out.extend(
                    f'<tr{_row_id(lane, key, row.new_no)}><td class="ln">{_ln(row.old_no)}</td>'
                    f'<td class="code {row.old_kind}">{shown(row.old_html)}</td><td class="ln">{_ln(row.new_no)}</td>'
                    f'<td class="code {row.new_kind}">{shown(row.new_html)}</td></tr>\n'
                    for row in hunk.split
                )
        else:
            out = ['<table class="diff unified hl">\n<colgroup><col class="ln"><col class="ln"><col></colgroup>\n']
            for hunk in file.hunks:
                out.append(f'<tr class="hunk"><td colspan="3">{shown(escape(hunk.header))}</td></tr>\n')
                if hunk.note:  # why its text is shown unhighlighted (diffs.HighlightBudget)
                    out.append(f'<tr class="hunk note"><td colspan="3">{escape(hunk.note)}</td></tr>\n')
                out.extend(
                    f'<tr class="{row.kind}"{_row_id(lane, key, row.new_no)}>'
                    f'<td class="ln">{_ln(row.old_no)}</td><td class="ln">{_ln(row.new_no)}</td>'
                    f'<td class="code">{shown(row.html)}</td></tr>\n'
                    for row in hunk.unified
                )
        out.append("</table>")
        tables.append((file, mark_safe("".join(out)), kind))  # noqa: S308  (see the docstring)
    return tables


def _show_tables(rollout, tables: list[tuple]) -> None:
    """The patch's files as the lane shows them: `diff_tables` open, `diff_extra` (scratch
    files) behind "+N extra files"."""
    rollout.diff_tables = [t for t in tables if t[2] not in COLLAPSED]
    rollout.diff_extra = [t for t in tables if t[2] in COLLAPSED]


def _test_names(outcomes) -> str:
    if not isinstance(outcomes, dict):
        return ""
    names = list(outcomes)
    for outcome in outcomes.values():
        if isinstance(outcome, dict):
            names += [str(t) for key in ("success", "failure") for t in (outcome.get(key) or [])]
    return "\n".join(map(str, names))


def _evidence_links(group: Group, evidence: list, lanes: Lanes, deferred: set[int] = frozenset()) -> list[dict]:
    """Where each citation opens: the patch line's row on this page, the turn (turns load
    lazily, so the turns view starting at it), or the rollout's test outcomes; each rollout
    named as this person names it (`lanes`)."""
    links = []
    for item in evidence if isinstance(evidence, list) else []:
        if not isinstance(item, dict):
            continue
        kind, index, locator = item.get("kind"), item.get("rollout"), str(item.get("locator", ""))
        if not isinstance(index, int):
            continue
        lane = lanes.key(index)
        if kind == "patch" and ":" in locator:
            path, _, line = locator.rpartition(":")
            href = f"#{patch_anchor(lane, path, line)}"
            if index in deferred:  # that lane's patch loads on demand: open the patch's own page there
                href = reverse("rollout-diff", args=[group.run.project.name, group.run.name, group.uid, lane]) + href
        elif kind == "turn" and locator.isdigit():
            base = reverse("rollout-turns", args=[group.run.project.name, group.run.name, group.uid, lane])
            href = f"{base}?start={locator}#turn-{lane}-{locator}"
        else:
            href = f"#tests-{lane}"
        links.append({"kind": kind, "locator": locator, "note": str(item.get("note", "")), "href": href})
    return links


def _turn_weight_links(group: Group, lane: str, weights: list | None) -> list[dict] | None:
    """A rollout's turn weights (selectors.turn_weights_of) as the verdict shows them, each
    turn linked as a turn citation is; None when the run gives no turn weights."""
    if weights is None:
        return None
    base = reverse("rollout-turns", args=[group.run.project.name, group.run.name, group.uid, lane])
    return [
        {
            "turn": turn,
            "weight": weight,
            "why": CATEGORY_WORDS.get(category, "cited"),
            "href": f"{base}?start={turn}#turn-{lane}-{turn}",
        }
        for turn, weight, category in weights
    ]


def _lane_asked(request: HttpRequest, lanes: Lanes) -> int | None:
    """The rollout `?lane=` names (its index, or a blind judge's label), or None."""
    raw = request.GET.get("lane")
    return lanes.index_of(raw) if raw else None


def _open_turns(request: HttpRequest, shown: list, lanes: Lanes) -> None:
    """`?lane=<lane>&start=<turn>` (a search hit's link): that lane's turns box comes already
    open at that turn, so the page lands on its `#turn-<lane>-<turn>` anchor without a click."""
    lane = _lane_asked(request, lanes)
    if lane is None:
        return
    rollout = next((r for r in shown if r.index == lane), None)
    if rollout is None:
        return
    start = params.whole_or(request.GET.get("start"), "start", default=0)
    content = RolloutContent.objects.only("rollout_id", "messages").filter(rollout_id=rollout.pk).first()
    messages = content.messages if content is not None and isinstance(content.messages, list) else []
    start = min(start, max(0, len(messages) - 1))
    rollout.open_turns = {
        "turns": to_turns(messages, start, start + TURNS_PER_PAGE),
        "n_messages": len(messages),
        "next_start": start + TURNS_PER_PAGE if start + TURNS_PER_PAGE < len(messages) else None,
    }


def _hit_bar(request: HttpRequest, group: Group, shown: list, lanes: Lanes) -> int | None:
    """`?q=&mode=` beside `lane=` (a search hit's link): that lane's header carries the hit
    bar, which walks the rollout's hits (static/js/hits.js, the rollout-hits JSON); the lane
    index, or None. A query that cannot be searched is shown there instead (never a 500).
    `mode=adjudicate` is the page's own parameter, not a search mode: the query then is `auto`."""
    raw = request.GET.get("q")
    lane = _lane_asked(request, lanes)
    rollout = next((r for r in shown if r.index == lane), None)
    if raw is None or rollout is None:
        return None
    mode = request.GET.get("mode") or "auto"
    mode = "auto" if mode == "adjudicate" else mode
    error = ""
    try:
        parse_query(raw, mode=mode)
    except QueryError as exc:
        error = str(exc)
    start = params.whole_or(request.GET.get("start"), "start", default=0)
    args = [group.run.project.name, group.run.name, group.uid]
    rollout.hit_bar = {
        "q": raw,
        "mode": mode,
        "error": error,
        "start": start,
        "hit": params.whole_or(request.GET.get("hit"), "hit", default=None),
        "hits_url": reverse("rollout-hits", args=[*args, rollout.lane]),
        "turns_url": reverse("rollout-turns", args=[*args, rollout.lane]),
        "search_url": reverse("search", args=[group.run.project.name]) + "?" + urlencode({"q": raw, "mode": mode}),
        "close_url": reverse("group", args=args)
        + "?"
        + urlencode({"lane": rollout.lane, "start": start})
        + f"#turn-{rollout.lane}-{start}",
    }
    return rollout.index


@login_required
@require_GET
def group_detail(request: HttpRequest, project: str, run: str, uid: str) -> HttpResponse:
    group, membership = page_group(request, project, run, uid, "view")
    return render_group_page(request, group, membership)


def render_group_page(
    request: HttpRequest,
    group: Group,
    membership,
    *,
    status: int = 200,
    errors: dict | None = None,
    form_data: dict | None = None,
    conflict=None,
) -> HttpResponse:
    """The side-by-side group page, with the review desk's panel for this person.

    In blind mode (an open blind assignment) no grader field is loaded, so none can reach
    the HTML; otherwise the first showing of a verdict to a person is logged as a reveal.
    """
    review = review_context(user=request.user, membership=membership, group=group)
    guide = guide_for(group.run.project_id)
    browse = browse_choice(
        group=group, user=request.user, membership=membership, assignment=review.assignment, judged=review.judgment is not None
    )
    fields = (
        draft_fields(form_data)
        if form_data is not None
        else (review.assignment.draft if review.assignment and review.assignment.is_open else {})
    )
    state = review.review
    adjudicating = bool(
        review.can_adjudicate
        and not review.judging
        and not review.blind
        and state is not None
        and state.n_reviews
        and (state.needs_adjudication or request.GET.get("mode") == "adjudicate")
        and not any(j.kind == Judgment.Kind.ADJUDICATION for j in review.others)
    )
    if adjudicating and form_data is None:  # the adjudicator's autosaved draft, if any
        draft = AdjudicationDraft.objects.filter(group=group, user=request.user).first()
        fields = draft.data if draft is not None else {}
        review.items = items_from_fields(fields)
    if form_data is not None:
        review.items = items_from_fields(fields)
    # Passing lanes first, still in the reviewer's own shuffle when blind; failing after.
    rollouts = lane_order(selectors.rollouts_with_patches(group), review.order)
    lanes = lanes_for(user=request.user, group=group, assignment=review.assignment, indexes=[r.index for r in rollouts])
    withhold_on_page(rollouts, lanes)  # a blind judge's page: no source, cost or producer metadata
    for rollout in rollouts:
        rollout.lane, rollout.lane_name = lanes.key(rollout.index), lanes.name(rollout.index)
    page_clusters = cluster_labels(rollouts, lanes)
    clusters = page_clusters.labels
    if review.blind or browse is not None:  # no grader field is loaded, so none can reach the HTML
        verdict, grades = None, {}
    else:
        verdict, grades = selectors.latest_verdict(group)
        if needs_browse_reveal(user=request.user, group=group, verdict=verdict):
            log_reveal(group=group, user=request.user, verdict=verdict, reason=Reveal.Reason.BROWSE)
    others: dict[int, list] = {}
    for judgment in review.others:
        for item in judgment.items.all():
            others.setdefault(item.rollout.index, []).append(
                {
                    "who": judgment.reviewer.username,
                    "kind": judgment.kind,
                    "tier": item.tier,
                    "rank": item.rank,
                    "cheat": item.cheat,
                }
            )
    only = request.GET.get("only", "all")
    shown = [
        r for r in rollouts if only == "all" or (only == "passing" and r.passed) or (only == "failing" and r.passed is False)
    ]
    budget = DIFF_PAGE_CHARS
    highlight_budget = HighlightBudget()  # one for the page: a lane that stalls the lexer cannot multiply it
    deferred: set[int] = set()
    for rollout in shown:  # only lanes on the page need their patch parsed and highlighted
        rollout.invisible = find_invisible(rollout.patch_text + "\n" + _test_names(rollout.test_outcomes))
        size = len(rollout.patch_text)
        if size > DIFF_INLINE_CHARS or size > budget:  # a click away, so one huge patch cannot stall the page
            rollout.diff_deferred = True
            deferred.add(rollout.index)
            continue
        budget -= size
        rollout.diff = parse_patch(rollout.patch_text, budget=highlight_budget)
        _show_tables(rollout, _diff_tables(rollout.diff, rollout.lane, "unified", rollout.extra_files))
    _open_turns(request, shown, lanes)
    hit_lane = _hit_bar(request, group, shown, lanes)
    turn_weights = selectors.turn_weights_of(group, grades)  # grader fields: empty where the verdict is hidden
    drop_policy = group.run.drop_policy or {}
    for rollout in rollouts:
        rollout.grade = grades.get(rollout.index)
        rollout.evidence_links = _evidence_links(group, rollout.grade.evidence, lanes, deferred) if rollout.grade else []
        rollout.mine = review.items.get(rollout.index, {})
        rollout.grader_says = grader_says(rollout.mine, rollout.grade) if rollout.grade else ""
        rollout.others = others.get(rollout.index, [])
        scores = rollout.mine.get("scores", {})
        rollout.score_rows = [(guide.dimension(name), scores.get(name, "")) for name in RUBRIC]
        rollout.errors = [m for f, m in (errors or {}).items() if f.split("-")[1:2] == [str(rollout.index)]]
        rollout.cluster_info = clusters.get(rollout.index)
        rollout.drop = drop_of(rollout.dropped, drop_policy)
        rollout.turn_weights = _turn_weight_links(group, rollout.lane, turn_weights.get(rollout.index))
        rollout.test_counts = rollout_test_counts(rollout.test_outcomes)
    adjudication = next((j for j in review.others if j.kind == Judgment.Kind.ADJUDICATION), None)
    rankings, sources = start_rankings(others=review.others, grades=grades, lanes=lanes) if adjudicating else ({}, [])
    return render(
        request,
        "reviews/group.html",
        {
            "project": group.run.project,
            "run": group.run,
            "group": group,
            "task": group.task,
            "rollouts": shown,
            "all_rollouts": rollouts,
            "has_clusters": bool(clusters),
            "n_clusters": page_clusters.distinct,
            "n_failing": sum(1 for r in shown if r.passed is False),
            "n_all": len(rollouts),
            "only": only,
            "diff_view": "unified",
            "hit_lane": hit_lane,
            "turns_per_page": TURNS_PER_PAGE,
            "lanes": lanes,
            "drops": [r for r in rollouts if r.drop],
            "shown_errors": lanes.errors_from_storage(errors or {}),
            "verdict": verdict,
            "review": review,
            "membership": membership,
            "guide": guide,
            "tier_guide": [(t, guide.tier(t)) for t in TIERS],
            "browse": browse,
            "errors": errors or {},
            "reasons": Judgment.Reason.choices,
            "adjudication": adjudication,
            "conflict": conflict,
            "n_passing": sum(1 for r in rollouts if r.passed),
            "tiers": list(TIERS),
            "n_tiered": sum(1 for r in rollouts if r.passed and r.mine.get("tier")),
            "show_mine": bool(review.judging or adjudicating or review.judgment is not None),
            "form_mode_adjudicate": adjudicating,
            "start_rankings": rankings,
            "start_sources": sources,
            # Passing rollouts a filter (?only=failing) leaves off the page: their judging fields
            # ride along hidden, so a draft saved or a judgment sent from here keeps them.
            "off_page": [r for r in rollouts if r.passed and r not in shown],
            "queue_place": (
                queue_place(assignment=review.assignment, group=group, reviewer=request.user) if review.assignment else None
            ),
            "group_note": fields.get("note", ""),
            "draft_reason": fields.get("reason", ""),
        },
        status=status,
    )


def _rollout_part(request: HttpRequest, project: str, run: str, uid: str, lane: str, body: str):
    """The group, the rollout `lane` names for this person (its index, or their label when
    they judge the group blind: anything else is 404) and its `body`, for a rollout partial."""
    group, _ = page_group(request, project, run, uid, "view")
    lanes = lanes_for(user=request.user, group=group)
    index = lanes.index_of(lane)
    if index is None:
        raise Http404("No such rollout in this group")
    rollout, content = selectors.rollout_content(group, index, body)
    rollout.lane, rollout.lane_name = lanes.key(index), lanes.name(index)
    return group, rollout, content


@login_required
@require_GET
@vary_on_headers("HX-Request")
def rollout_diff(request: HttpRequest, project: str, run: str, uid: str, lane: str) -> HttpResponse:
    group, rollout, content = _rollout_part(request, project, run, uid, lane, "patch")
    patch = content.patch or ""
    if request.GET.get("format") == "raw":  # the whole text, as data: never rendered by the browser
        response = HttpResponse(patch, content_type="text/plain; charset=utf-8")
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Disposition"] = content_disposition_header(True, f"rollout-{rollout.lane}.patch")
        patch_cache_control(response, private=True, no_store=True)
        return response
    view = "split" if request.GET.get("view") == "split" else "unified"
    rollout.diff = parse_patch(patch, max_rows=DIFF_PARTIAL_ROWS, max_chars=DIFF_PARTIAL_CHARS)
    if rollout.diff.error and len(patch) > DIFF_PARTIAL_CHARS:
        rollout.diff = replace(rollout.diff, raw=patch[:DIFF_PARTIAL_CHARS])
        rollout.diff_note = f"Showing the first {DIFF_PARTIAL_CHARS:,} of its {len(patch):,} characters."
    elif rollout.diff.cut:
        rollout.diff_note = (
            f"Showing the first {rollout.diff.shown_lines:,} of its {rollout.diff.total_lines:,} lines "
            f"({len(rollout.diff.files)} of {rollout.patch_files} files); one view shows at most "
            f"{DIFF_PARTIAL_ROWS:,} lines or {DIFF_PARTIAL_CHARS:,} characters."
        )
    if getattr(rollout, "diff_note", ""):
        rollout.diff_raw_url = (
            reverse("rollout-diff", args=[group.run.project.name, group.run.name, group.uid, lane]) + "?format=raw"
        )
    _show_tables(rollout, _diff_tables(rollout.diff, rollout.lane, view, rollout.extra_files))
    context = {"project": group.run.project, "run": group.run, "group": group, "rollout": rollout, "diff_view": view}
    template = "reviews/group.html#rollout-diff" if request.htmx else "reviews/rollout_part.html"
    return render(request, template, {**context, "part": "diff"})


@login_required
@require_GET
@vary_on_headers("HX-Request")
def rollout_turns(request: HttpRequest, project: str, run: str, uid: str, lane: str) -> HttpResponse:
    group, rollout, content = _rollout_part(request, project, run, uid, lane, "messages")
    try:
        start = max(0, int(request.GET.get("start", 0)))
    except ValueError:
        start = 0
    messages = content.messages if isinstance(content.messages, list) else []
    query = request.GET.get("q", "").strip()
    if len(query) > TURN_QUERY_CHARS:
        return HttpResponse(
            f"q: a search within a rollout is at most {TURN_QUERY_CHARS} characters (got {len(query):,}).",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    if query:
        turns, next_start = find_turns(messages, query, start, TURNS_PER_PAGE)
    else:
        turns = to_turns(messages, start, start + TURNS_PER_PAGE)
        next_start = start + TURNS_PER_PAGE if start + TURNS_PER_PAGE < len(messages) else None
    for turn in turns:
        turn.fold = fold_head(turn.observation)
    context = {
        "project": group.run.project,
        "run": group.run,
        "group": group,
        "rollout": rollout,
        "query": query,
        "start": start,
        "turns": turns,
        "next_start": next_start,
        "n_messages": len(messages),
    }
    template = "reviews/group.html#rollout-turns" if request.htmx else "reviews/rollout_part.html"
    return render(request, template, {**context, "part": "turns"})


@login_required
@require_GET
@vary_on_headers("HX-Request")
def rollout_log(request: HttpRequest, project: str, run: str, uid: str, lane: str) -> HttpResponse:
    group, rollout, content = _rollout_part(request, project, run, uid, lane, "test_log")
    log = content.test_log or ""
    truncated = len(log) > LOG_PREVIEW_CHARS
    context = {
        "project": group.run.project,
        "run": group.run,
        "group": group,
        "rollout": rollout,
        "log": log[-LOG_PREVIEW_CHARS:] if truncated else log,
        "log_truncated": truncated,
        "log_size": len(log),
    }
    template = "reviews/group.html#rollout-log" if request.htmx else "reviews/rollout_part.html"
    return render(request, template, {**context, "part": "log"})
