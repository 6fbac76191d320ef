"""The group page and its rollout partials as view models: what the templates render
(templates/reviews/group.html, rollout_part.html), read and assembled here so the views
only parse the request, call one of these and render.

Every query the page needs runs in this module or the selectors it calls; the view models
are frozen dataclasses of plain values (and tuples of them), so a template cannot issue a
query. In blind mode (an open blind assignment) no grader field is loaded, so none can
reach the HTML. The one write a page view makes, a reveal logged the first time a verdict
is shown to a person browsing (`GroupPage.browse_reveal`), is left to the view to make
through the service, so nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, fields, replace
from typing import Any

from django.urls import reverse
from django.utils.http import urlencode

from grading.formats import params
from grading.grader.evidence import split_file_locator
from grading.method.partial import drop_of
from grading.method.project_guides import guide_for
from grading.method.tiers import TIERS
from grading.method.turn_weights import CATEGORY_WORDS
from grading.models import Group, Membership, Rollout, RolloutContent
from grading.registry.workspaces import has_workspace
from grading.repos.types import BASE
from grading.rollouts.diffs import FileDiff, HighlightBudget, ParsedPatch, parse_patch
from grading.rollouts.invisible import INVISIBLE, find_invisible
from grading.rollouts.patch_files import COLLAPSED, file_kind, order_files
from grading.rollouts.turns import find_turns, fold_head, to_turns
from grading.search.query import QueryError, parse_query
from grading.selectors.rollouts import patch_highlight, rollout_content, rollouts_with_patches
from grading.selectors.verdicts import latest_verdict, settled_without_grader, turn_weights_of, verdict_checks
from grading.templatetags.gagar import patch_anchor
from reviews.access import sees_why_next
from reviews.forms import draft_fields
from reviews.models import AdjudicationDraft, Judgment
from reviews.selectors.blind import needs_browse_reveal
from reviews.selectors.browse import browse_choice
from reviews.selectors.judge_panel import grader_says, start_rankings
from reviews.selectors.lanes import Lanes, lanes_for, withhold_on_page
from reviews.selectors.overview import cluster_labels, lane_order, rollout_test_counts
from reviews.selectors.queue import queue_place
from reviews.selectors.review_context import ReviewContext, items_from_fields, review_context
from reviews.services.judgments import RUBRIC

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


# --- view models ------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupHead:
    uid: str
    step_number: int
    n_passed: int
    n_failed: int
    n_unknown: int
    is_mixed: bool
    distinct_solutions: int | None


@dataclass(frozen=True)
class TaskHead:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    gold_patch: str
    has_workspace: bool = False  # its repository can be read here (the lanes' files views)


@dataclass(frozen=True)
class DiffTable:
    """One file of a patch as the `diff_table` template tag draws it (grading.templatetags.gagar)."""

    file: FileDiff
    kind: str  # grading.rollouts.patch_files.KINDS: core first, scratch files collapsed
    lane: str
    view: str  # unified | split
    marks: bool  # the patch holds bidi / zero-width characters: show them as ⟨U+…⟩
    file_url: str = ""  # the lane's files view of this file (hunk headers open it at their line)


@dataclass(frozen=True)
class Diff:
    """A lane's patch: plain text where it does not parse, else its files' tables, the
    scratch files (`extra`) apart behind "+N extra files"."""

    error: str | None
    raw: str
    files: tuple[FileDiff, ...]
    tables: tuple[DiffTable, ...] = ()
    extra: tuple[DiffTable, ...] = ()
    note: str = ""  # why the partial shows less than the whole patch
    raw_url: str = ""  # the whole patch as plain text, where it shows less
    extra_url: str = ""  # where `extra`'s diffs load from when asked (the group page); "": rendered with it


@dataclass(frozen=True)
class GradeView:
    tier: str
    rank: int
    cheat: bool
    scores: dict


@dataclass(frozen=True)
class Lane:
    """One rollout as this person's page shows it (their lane key and name; blind fields blanked)."""

    index: int
    lane: str
    lane_name: str
    outcome: str
    passed: bool | None
    reward: float | None
    exit_status: str
    n_messages: int
    tokens: int | None
    cost_usd: float | None
    patch_files: int
    patch_added: int
    patch_removed: int
    patch_size: int
    source_format: str
    source_ref: str
    test_outcomes: Any
    tests_passed: int
    tests_failed: int
    response_text: str | None
    cluster_info: Any = None
    drop: Any = None
    invisible: tuple[str, ...] = ()
    diff: Diff | None = None
    diff_deferred: bool = False
    open_turns: dict | None = None
    hit_bar: dict | None = None
    grade: GradeView | None = None
    evidence_links: tuple[dict, ...] = ()
    mine: dict = field(default_factory=dict)
    grader_says: str = ""
    others: tuple[dict, ...] = ()
    score_rows: tuple = ()
    errors: tuple[str, ...] = ()
    turn_weights: tuple[dict, ...] | None = None
    test_counts: dict = field(default_factory=dict)


@dataclass(frozen=True)
class GroupPage:
    """The group page's context (templates/reviews/group.html), one field per name it reads."""

    project: Any
    run: Any
    group: GroupHead
    task: TaskHead
    rollouts: tuple[Lane, ...]  # the lanes on the page (`?only=` filters them)
    all_rollouts: tuple[Lane, ...]
    has_clusters: bool
    n_clusters: int
    n_failing: int
    n_all: int
    only: str
    diff_view: str
    hit_lane: int | None
    turns_per_page: int
    lanes: Lanes
    drops: tuple[Lane, ...]
    shown_errors: dict
    verdict: Any
    review: ReviewContext
    membership: Membership
    guide: Any
    tier_guide: tuple
    browse: Any
    errors: dict
    reasons: list
    adjudication: Judgment | None
    conflict: Any
    n_passing: int
    tiers: tuple[str, ...]
    n_tiered: int
    show_mine: bool
    form_mode_adjudicate: bool
    start_rankings: dict
    start_sources: list
    # Passing rollouts a filter (?only=failing) leaves off the page: their judging fields
    # ride along hidden, so a draft saved or a judgment sent from here keeps them.
    off_page: tuple[Lane, ...]
    queue_place: Any
    group_note: str
    draft_reason: str
    # The commands the shown verdict's grader ran (evidence check:<n>); none while it is hidden.
    checks: tuple[dict, ...] = ()
    # Credit settled without a model call (grading.verdicts.identical), said in place of a
    # grader's verdict; False when a grader's verdict stands or the page is blind.
    settled: bool = False
    # Not rendered: the verdict a person browsing is shown for the first time, for the view
    # to log as a reveal (reviews.services.judgments.log_reveal); None when there is none.
    browse_reveal: Any = None

    def context(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "browse_reveal"}


@dataclass(frozen=True)
class RolloutPart:
    """A rollout partial's context: its diff, a page of its turns, or its test log."""

    project: Any
    run: Any
    group: GroupHead
    rollout: Lane
    part: str  # diff | extra (a patch's scratch files) | turns | log
    values: dict = field(default_factory=dict)

    def context(self) -> dict:
        context = {"project": self.project, "run": self.run, "group": self.group, "rollout": self.rollout}
        return {**context, "part": self.part, **self.values}


# --- building them ----------------------------------------------------------------------


def group_head(group: Group) -> GroupHead:
    return GroupHead(
        uid=group.uid,
        step_number=group.step.number,
        n_passed=group.n_passed,
        n_failed=group.n_failed,
        n_unknown=group.n_unknown,
        is_mixed=group.is_mixed,
        distinct_solutions=group.distinct_solutions,
    )


def _task_head(group: Group) -> TaskHead:
    task = group.task
    return TaskHead(
        instance_id=task.instance_id,
        repo=task.repo,
        base_commit=task.base_commit,
        problem_statement=task.problem_statement,
        gold_patch=task.gold_patch,
        has_workspace=has_workspace(task),
    )


def lane_of(rollout: Rollout, lanes: Lanes, **values) -> Lane:
    """A rollout's lane from its stored fields (after withhold_on_page blanked a blind judge's)."""
    return Lane(
        index=rollout.index,
        lane=lanes.key(rollout.index),
        lane_name=lanes.name(rollout.index),
        outcome=rollout.outcome,
        passed=rollout.passed,
        reward=rollout.reward,
        exit_status=rollout.exit_status,
        n_messages=rollout.n_messages,
        tokens=rollout.tokens,
        cost_usd=rollout.cost_usd,
        patch_files=rollout.patch_files,
        patch_added=rollout.patch_added,
        patch_removed=rollout.patch_removed,
        patch_size=len(getattr(rollout, "patch_text", "") or ""),
        source_format=rollout.source_format,
        source_ref=rollout.source_ref,
        test_outcomes=getattr(rollout, "test_outcomes", None),
        tests_passed=rollout.tests_passed,
        tests_failed=rollout.tests_failed,
        response_text=getattr(rollout, "response_text", None),
        **values,
    )


def _grade(grade) -> GradeView | None:
    if grade is None:
        return None
    return GradeView(tier=grade.tier, rank=grade.rank, cheat=grade.cheat, scores=grade.scores)


def files_url(group: Group, lane: str, path: str, *, at: str = "rollout", line: int | None = None) -> str:
    """The lane's files view of `path` (at the rollout's state, or `at="base"`), opened at `line`."""
    query: dict[str, str | int] = {"path": path, **({"at": "base"} if at == "base" else {}), **({"line": line} if line else {})}
    return reverse("rollout-files", args=[*_group_args(group), lane]) + "?" + urlencode(query)


def diff_of(parsed: ParsedPatch, lane: str, view: str, extra_files=(), *, group: Group | None = None, **values) -> Diff:
    """A parsed patch's files in the unified or split view, core change first and the agent's
    scratch files last (grading.rollouts.patch_files). `extra_files`: the rollout's cluster's
    (Rollout.extra_files). With `group` (whose task names a repository), each file links to
    the lane's files view (a removed file: at the base commit)."""
    marks = bool(INVISIBLE.search(parsed.raw or ""))
    linked = group is not None and has_workspace(group.task)

    def url(file: FileDiff) -> str:
        if not linked or group is None:
            return ""
        return files_url(group, lane, file.path, at="base" if file.status == "removed" else "rollout")

    tables = tuple(
        DiffTable(file=file, kind=kind, lane=lane, view=view, marks=marks, file_url=url(file))
        for kind, file in order_files(parsed.files, extra_files=extra_files or ())
    )
    return Diff(
        error=parsed.error,
        raw=parsed.raw,
        files=tuple(parsed.files),
        tables=tuple(t for t in tables if t.kind not in COLLAPSED),
        extra=tuple(t for t in tables if t.kind in COLLAPSED),
        **values,
    )


def _test_names(outcomes) -> str:
    if not isinstance(outcomes, dict):
        return ""
    names = list(outcomes)
    for outcome in outcomes.values():
        if isinstance(outcome, dict):
            names += [str(t) for key in ("success", "failure") for t in (outcome.get(key) or [])]
    return "\n".join(map(str, names))


def _shown_inline(extra_files) -> Callable[[str, str], bool]:
    """render_file for a lane's patch on the page: its scratch files (COLLAPSED kinds) are
    not rendered there; their diffs load when asked (`extra_files_part`)."""
    extra = frozenset(extra_files or ())
    return lambda path, status: file_kind(path, status, extra_files=extra) not in COLLAPSED


def _only_collapsed(extra_files) -> Callable[[str, str], bool]:
    """render_file for the scratch files' partial: those files only."""
    extra = frozenset(extra_files or ())
    return lambda path, status: file_kind(path, status, extra_files=extra) in COLLAPSED


def _group_args(group: Group) -> list:
    return [group.run.project.name, group.run.name, group.uid]


def _evidence_links(
    group: Group,
    evidence: object,
    lanes: Lanes,
    deferred: AbstractSet[int] = frozenset(),
    scratch: Mapping[int, AbstractSet[str]] | None = None,
) -> tuple[dict, ...]:
    """Where each citation opens: the patch line's row on this page (in a patch loaded on
    demand, `deferred`, or a scratch file's, `scratch`: that part's own page), the turn (turns
    load lazily, so the turns view starting at it), the line in the lane's files view, the
    check in the verdict's checks, or the rollout's test outcomes; each rollout named as this
    person names it (`lanes`)."""
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
                href = reverse("rollout-diff", args=[*_group_args(group), lane]) + href
            elif path in (scratch or {}).get(index, ()):  # a scratch file's diff loads on demand too
                href = reverse("rollout-extra-files", args=[*_group_args(group), lane]) + href
        elif kind == "file" and (parts := split_file_locator(locator)) is not None:
            at, path, line_no = parts
            # A rollout's state opens in that rollout's lane; the base commit in the cited rollout's.
            state_lane = lane if at == BASE else lanes.key(at)
            hx = files_url(group, state_lane, path, at="base" if at == BASE else "rollout", line=line_no)
            links.append(
                {
                    "kind": kind,
                    "locator": locator,
                    "note": str(item.get("note", "")),
                    "href": f"{hx}#file-{state_lane}-L{line_no}",
                    "hx": hx,  # loads into the lane's files box on the page
                    "lane": state_lane,
                }
            )
            continue
        elif kind == "check":
            href = f"#check-{locator.removeprefix('check:')}"
        elif kind == "turn" and locator.isdigit():
            base = reverse("rollout-turns", args=[*_group_args(group), lane])
            href = f"{base}?start={locator}#turn-{lane}-{locator}"
        else:
            href = f"#tests-{lane}"
        links.append({"kind": kind, "locator": locator, "note": str(item.get("note", "")), "href": href})
    return tuple(links)


def _turn_weight_links(group: Group, lane: str, weights: list | None) -> tuple[dict, ...] | None:
    """A rollout's turn weights (grading.selectors.verdicts.turn_weights_of) as the verdict shows them, each
    turn linked as a turn citation is; None when the run gives no turn weights."""
    if weights is None:
        return None
    base = reverse("rollout-turns", args=[*_group_args(group), lane])
    return tuple(
        {
            "turn": turn,
            "weight": weight,
            "why": CATEGORY_WORDS.get(category, "cited"),
            "href": f"{base}?start={turn}#turn-{lane}-{turn}",
        }
        for turn, weight, category in weights
    )


def _lane_asked(query: Mapping, lanes: Lanes) -> int | None:
    """The rollout `?lane=` names (its index, or a blind judge's label), or None."""
    raw = query.get("lane")
    return lanes.index_of(raw) if raw else None


def _open_turns(query: Mapping, shown: list[Rollout], lanes: Lanes) -> tuple[int | None, dict | None]:
    """`?lane=<lane>&start=<turn>` (a search hit's link): that lane's turns box comes already
    open at that turn, so the page lands on its `#turn-<lane>-<turn>` anchor without a click."""
    lane = _lane_asked(query, lanes)
    if lane is None:
        return None, None
    rollout = next((r for r in shown if r.index == lane), None)
    if rollout is None:
        return None, None
    start = params.whole_or(query.get("start"), "start", default=0)
    content = RolloutContent.objects.only("rollout_id", "messages").filter(rollout_id=rollout.pk).first()
    messages = content.messages if content is not None and isinstance(content.messages, list) else []
    start = min(start, max(0, len(messages) - 1))
    return rollout.index, {
        "turns": to_turns(messages, start, start + TURNS_PER_PAGE),
        "n_messages": len(messages),
        "next_start": start + TURNS_PER_PAGE if start + TURNS_PER_PAGE < len(messages) else None,
    }


def _hit_bar(query: Mapping, group: Group, shown: list[Rollout], lanes: Lanes) -> tuple[int | None, dict | None]:
    """`?q=&mode=` beside `lane=` (a search hit's link): that lane's header carries the hit
    bar, which walks the rollout's hits (static/js/hits.js, the rollout-hits JSON); the lane
    index and the bar, or None. A query that cannot be searched is shown there instead
    (never a 500). `mode=adjudicate` is the page's own parameter, not a search mode: the
    query then is `auto`."""
    raw = query.get("q")
    lane = _lane_asked(query, lanes)
    rollout = next((r for r in shown if r.index == lane), None)
    if raw is None or rollout is None:
        return None, None
    mode = query.get("mode") or "auto"
    mode = "auto" if mode == "adjudicate" else mode
    error = ""
    try:
        parse_query(raw, mode=mode)
    except QueryError as exc:
        error = str(exc)
    start = params.whole_or(query.get("start"), "start", default=0)
    args = _group_args(group)
    key = lanes.key(rollout.index)
    return rollout.index, {
        "q": raw,
        "mode": mode,
        "error": error,
        "start": start,
        "hit": params.whole_or(query.get("hit"), "hit", default=None),
        "hits_url": reverse("rollout-hits", args=[*args, key]),
        "turns_url": reverse("rollout-turns", args=[*args, key]),
        "search_url": reverse("search", args=[group.run.project.name]) + "?" + urlencode({"q": raw, "mode": mode}),
        "close_url": reverse("group", args=args) + "?" + urlencode({"lane": key, "start": str(start)}) + f"#turn-{key}-{start}",
    }


def group_page(
    *,
    user,
    group: Group,
    membership: Membership,
    query: Mapping,
    errors: dict | None = None,
    form_data: Mapping | None = None,
    conflict=None,
) -> GroupPage:
    """The side-by-side group page for `user`, with the review desk's panel for this person.
    `query`: the page's GET parameters (`only`, `mode`, and a search hit's `lane`, `start`,
    `q`, `hit`); `errors`, `form_data` and `conflict`: a refused judgment shown again."""
    review = review_context(user=user, membership=membership, group=group)
    guide = guide_for(group.run.project_id)
    browse = browse_choice(
        group=group, user=user, membership=membership, assignment=review.assignment, judged=review.judgment is not None
    )
    fields_ = (
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
        and (state.needs_adjudication or query.get("mode") == "adjudicate")
        and not any(j.kind == Judgment.Kind.ADJUDICATION for j in review.others)
    )
    if adjudicating and form_data is None:  # the adjudicator's autosaved draft, if any
        draft = AdjudicationDraft.objects.filter(group=group, user=user).first()
        fields_ = draft.data if draft is not None else {}
        review.items = items_from_fields(fields_)
    if form_data is not None:
        review.items = items_from_fields(fields_)
    # Passing lanes first, still in the reviewer's own shuffle when blind; failing after.
    rollouts = lane_order(rollouts_with_patches(group, highlighted_up_to=DIFF_INLINE_CHARS), review.order)
    lanes = lanes_for(user=user, group=group, assignment=review.assignment, indexes=[r.index for r in rollouts])
    withhold_on_page(rollouts, lanes)  # a blind judge's page: no source, cost or producer metadata
    page_clusters = cluster_labels(rollouts, lanes)
    clusters = page_clusters.labels
    browse_reveal = None
    if review.blind or browse is not None:  # no grader field is loaded, so none can reach the HTML
        verdict, grades = None, {}
    else:
        verdict, grades = latest_verdict(group)
        if needs_browse_reveal(user=user, group=group, verdict=verdict):
            browse_reveal = verdict
    if browse is not None:  # its one query said (a verdict hidden from this person says nothing)
        settled = browse.settled
    else:
        settled = not review.blind and verdict is None and group.is_mixed and settled_without_grader(group) is not None
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
    only = query.get("only", "all")
    shown = [
        r for r in rollouts if only == "all" or (only == "passing" and r.passed) or (only == "failing" and r.passed is False)
    ]
    budget = DIFF_PAGE_CHARS
    highlight_budget = HighlightBudget()  # one for the page: a lane that stalls the lexer cannot multiply it
    deferred: set[int] = set()
    scratch: dict[int, frozenset[str]] = {}  # a lane on the page -> its scratch files (their diffs load when asked)
    on_page: dict[int, dict] = {}
    for rollout in shown:  # only lanes on the page need their patch parsed and highlighted
        values = on_page.setdefault(rollout.index, {})
        values["invisible"] = tuple(find_invisible(rollout.patch_text + "\n" + _test_names(rollout.test_outcomes)))
        size = len(rollout.patch_text)
        if size > DIFF_INLINE_CHARS or size > budget:  # a click away, so one huge patch cannot stall the page
            values["diff_deferred"] = True
            deferred.add(rollout.index)
            continue
        budget -= size
        # Highlighted ahead where it was (grading.highlights); the scratch files load on demand, unlexed here.
        parsed = parse_patch(
            rollout.patch_text,
            budget=highlight_budget,
            ahead=rollout.patch_ahead,
            render_file=_shown_inline(rollout.extra_files),
        )
        key = lanes.key(rollout.index)
        extra_url = reverse("rollout-extra-files", args=[*_group_args(group), key]) + "?view=unified"
        values["diff"] = diff_of(parsed, key, "unified", rollout.extra_files, group=group, extra_url=extra_url)
        scratch[rollout.index] = frozenset(t.file.path for t in values["diff"].extra)
    turns_lane, open_turns = _open_turns(query, shown, lanes)
    if turns_lane is not None:
        on_page[turns_lane]["open_turns"] = open_turns
    hit_lane, hit_bar = _hit_bar(query, group, shown, lanes)
    if hit_lane is not None:
        on_page[hit_lane]["hit_bar"] = hit_bar
    turn_weights = turn_weights_of(group, grades)  # grader fields: empty where the verdict is hidden
    drop_policy = group.run.drop_policy or {}
    all_lanes = []
    for rollout in rollouts:
        grade = grades.get(rollout.index)
        mine = review.items.get(rollout.index, {})
        scores = mine.get("scores", {})
        key = lanes.key(rollout.index)
        all_lanes.append(
            lane_of(
                rollout,
                lanes,
                grade=_grade(grade),
                evidence_links=_evidence_links(group, grade.evidence, lanes, deferred, scratch) if grade else (),
                mine=mine,
                grader_says=grader_says(mine, grade) if grade else "",
                others=tuple(others.get(rollout.index, [])),
                score_rows=tuple((guide.dimension(name), scores.get(name, "")) for name in RUBRIC),
                errors=tuple(m for f, m in (errors or {}).items() if f.split("-")[1:2] == [str(rollout.index)]),
                cluster_info=clusters.get(rollout.index),
                drop=drop_of(rollout.dropped, drop_policy),
                turn_weights=_turn_weight_links(group, key, turn_weights.get(rollout.index)),
                test_counts=rollout_test_counts(rollout.test_outcomes),
                **on_page.get(rollout.index, {}),
            )
        )
    by_index = {lane.index: lane for lane in all_lanes}
    shown_lanes = tuple(by_index[r.index] for r in shown)
    adjudication = next((j for j in review.others if j.kind == Judgment.Kind.ADJUDICATION), None)
    rankings, sources = start_rankings(others=review.others, grades=grades, lanes=lanes) if adjudicating else ({}, [])
    shown_indexes = {r.index for r in shown}
    return GroupPage(
        project=group.run.project,
        run=group.run,
        group=group_head(group),
        task=_task_head(group),
        rollouts=shown_lanes,
        all_rollouts=tuple(all_lanes),
        has_clusters=bool(clusters),
        n_clusters=page_clusters.distinct,
        n_failing=sum(1 for r in shown if r.passed is False),
        n_all=len(rollouts),
        only=only,
        diff_view="unified",
        hit_lane=hit_lane,
        turns_per_page=TURNS_PER_PAGE,
        lanes=lanes,
        drops=tuple(lane for lane in all_lanes if lane.drop),
        shown_errors=lanes.errors_from_storage(errors or {}),
        verdict=verdict,
        review=review,
        membership=membership,
        guide=guide,
        tier_guide=tuple((t, guide.tier(t)) for t in TIERS),
        browse=browse,
        errors=errors or {},
        reasons=Judgment.Reason.choices,
        adjudication=adjudication,
        conflict=conflict,
        n_passing=sum(1 for r in rollouts if r.passed),
        tiers=tuple(TIERS),
        n_tiered=sum(1 for lane in all_lanes if lane.passed and lane.mine.get("tier")),
        show_mine=bool(review.judging or adjudicating or review.judgment is not None),
        form_mode_adjudicate=adjudicating,
        start_rankings=rankings,
        start_sources=sources,
        off_page=tuple(lane for lane in all_lanes if lane.passed and lane.index not in shown_indexes),
        queue_place=(
            queue_place(
                assignment=review.assignment, group=group, reviewer=user, explain=sees_why_next(membership, review.assignment)
            )
            if review.assignment
            else None
        ),
        group_note=fields_.get("note", ""),
        draft_reason=fields_.get("reason", ""),
        browse_reveal=browse_reveal,
        settled=settled,
        checks=tuple(
            {
                "number": c.number,
                "lane": lanes.key(c.rollout.index),
                "lane_name": lanes.name(c.rollout.index),
                "command": c.command,
                "exit_status": c.exit_status,
                "seconds": c.seconds,
                "output": c.output,
                "truncated": c.truncated,
                "killed": c.killed,
                "sandbox": c.sandbox,
            }
            for c in (verdict_checks(verdict) if verdict is not None else ())
        ),
    )


# --- the rollout partials ---------------------------------------------------------------


def part_rollout(*, user, group: Group, lane: str, body: str) -> tuple[Rollout, RolloutContent, Lanes] | None:
    """The rollout `lane` names for this person (its index, or their label when they judge
    the group blind) and its `body`; None when it names none of the group's."""
    lanes = lanes_for(user=user, group=group)
    index = lanes.index_of(lane)
    if index is None:
        return None
    rollout, content = rollout_content(group, index, body)
    return rollout, content, lanes


def rollout_part(group: Group, lane: Lane, part: str, **values) -> RolloutPart:
    return RolloutPart(project=group.run.project, run=group.run, group=group_head(group), rollout=lane, part=part, values=values)


def raw_patch(*, user, group: Group, lane: str) -> tuple[str, str] | None:
    """(the lane's key, its whole patch) for the plain-text download; None: no such lane."""
    found = part_rollout(user=user, group=group, lane=lane, body="patch")
    if found is None:
        return None
    rollout, content, lanes = found
    return lanes.key(rollout.index), content.patch or ""


def diff_part(*, user, group: Group, lane: str, view: str) -> RolloutPart | None:
    """A rollout's patch in the unified or split view, at most DIFF_PARTIAL_ROWS lines and
    DIFF_PARTIAL_CHARS characters of it (saying so, with a link to the whole text)."""
    return _patch_part(user=user, group=group, lane=lane, view=view, scratch=False)


def extra_files_part(*, user, group: Group, lane: str, view: str) -> RolloutPart | None:
    """The diffs of a rollout's scratch files (the COLLAPSED kinds the group page lists behind
    "+N extra files" and loads from here when asked), within the diff partial's limits;
    None: no such lane."""
    return _patch_part(user=user, group=group, lane=lane, view=view, scratch=True)


def _patch_part(*, user, group: Group, lane: str, view: str, scratch: bool) -> RolloutPart | None:
    found = part_rollout(user=user, group=group, lane=lane, body="patch")
    if found is None:
        return None
    rollout, content, lanes = found
    patch = content.patch or ""
    parsed = parse_patch(
        patch,
        max_rows=DIFF_PARTIAL_ROWS,
        max_chars=DIFF_PARTIAL_CHARS,
        ahead=patch_highlight(rollout, patch),
        render_file=_only_collapsed(rollout.extra_files) if scratch else None,
    )
    note = ""
    if parsed.error and len(patch) > DIFF_PARTIAL_CHARS:
        parsed = replace(parsed, raw=patch[:DIFF_PARTIAL_CHARS])
        note = f"Showing the first {DIFF_PARTIAL_CHARS:,} of its {len(patch):,} characters."
    elif parsed.cut:
        note = (
            f"Showing the first {parsed.shown_lines:,} of its {parsed.total_lines:,} lines "
            f"({len(parsed.files)} of {rollout.patch_files} files); one view shows at most "
            f"{DIFF_PARTIAL_ROWS:,} lines or {DIFF_PARTIAL_CHARS:,} characters."
        )
    raw_url = reverse("rollout-diff", args=[*_group_args(group), lane]) + "?format=raw" if note else ""
    key = lanes.key(rollout.index)
    diff = diff_of(parsed, key, view, rollout.extra_files, group=group, note=note, raw_url=raw_url)
    return rollout_part(group, lane_of(rollout, lanes, diff=diff), "extra" if scratch else "diff", diff_view=view)


class TurnQueryTooLong(ValueError):
    """A search within a rollout's turns longer than TURN_QUERY_CHARS."""


def turns_part(*, user, group: Group, lane: str, start: int, query: str) -> RolloutPart | None:
    """A page of a rollout's turns from `start`, or of those containing `query` (raises
    TurnQueryTooLong past TURN_QUERY_CHARS, once the lane is known to exist)."""
    found = part_rollout(user=user, group=group, lane=lane, body="messages")
    if found is None:
        return None
    if len(query) > TURN_QUERY_CHARS:
        raise TurnQueryTooLong(query)
    rollout, content, lanes = found
    messages = content.messages if isinstance(content.messages, list) else []
    if query:
        turns, next_start = find_turns(messages, query, start, TURNS_PER_PAGE)
    else:
        turns = to_turns(messages, start, start + TURNS_PER_PAGE)
        next_start = start + TURNS_PER_PAGE if start + TURNS_PER_PAGE < len(messages) else None
    turns = [replace(turn, fold=fold_head(turn.observation)) for turn in turns]
    return rollout_part(
        group,
        lane_of(rollout, lanes),
        "turns",
        query=query,
        start=start,
        turns=turns,
        next_start=next_start,
        n_messages=len(messages),
    )


def log_part(*, user, group: Group, lane: str) -> RolloutPart | None:
    """A rollout's test log, its last LOG_PREVIEW_CHARS characters where it is longer."""
    found = part_rollout(user=user, group=group, lane=lane, body="test_log")
    if found is None:
        return None
    rollout, content, lanes = found
    log = content.test_log or ""
    truncated = len(log) > LOG_PREVIEW_CHARS
    return rollout_part(
        group,
        lane_of(rollout, lanes),
        "log",
        log=log[-LOG_PREVIEW_CHARS:] if truncated else log,
        log_truncated=truncated,
        log_size=len(log),
    )
