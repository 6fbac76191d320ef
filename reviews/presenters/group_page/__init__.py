"""The group page and its rollout partials as view models: what the templates render
(templates/reviews/group.html, rollout_part.html), read and assembled here so the views
only parse the request, call one of these and render. `group_page` composes the page from
its parts, each a module of this package: the head (`head`), the lanes (`lanes`), their
diffs (`diffs`), the verdict's citations (`evidence`), a search hit's turns (`turns`); the
partials the page loads on demand are `parts`.

Every query the page needs runs in this package or the selectors it calls; the view models
are frozen dataclasses of plain values (and tuples of them), so a template cannot issue a
query. In blind mode (an open blind assignment) no grader field is loaded, so none can
reach the HTML. The one write a page view makes, a reveal logged the first time a verdict
is shown to a person browsing (`GroupPage.browse_reveal`), is left to the view to make
through the service, so nothing here writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from django.urls import reverse

from grading.method.partial import drop_of
from grading.method.project_guides import guide_for
from grading.method.tiers import TIERS
from grading.models import Group, Membership
from grading.rollouts.diffs import HighlightBudget, parse_patch
from grading.rollouts.invisible import find_invisible
from grading.selectors.rollouts import rollouts_with_patches
from grading.selectors.verdicts import latest_verdict, settled_without_grader, turn_weights_of, verdict_checks
from reviews.access import sees_why_next
from reviews.forms import draft_fields
from reviews.models import AdjudicationDraft, Judgment
from reviews.presenters.group_page.diffs import DIFF_INLINE_CHARS, DIFF_PAGE_CHARS, diff_of, shown_inline
from reviews.presenters.group_page.evidence import evidence_links, turn_weight_links
from reviews.presenters.group_page.head import GroupHead, TaskHead, group_args, group_head, task_head
from reviews.presenters.group_page.lanes import Lane, grade_view, lane_of, test_names
from reviews.presenters.group_page.turns import TURNS_PER_PAGE, hit_bar_of, opened_turns
from reviews.selectors.blind import needs_browse_reveal
from reviews.selectors.browse import browse_choice
from reviews.selectors.judge_panel import grader_says, start_rankings
from reviews.selectors.lanes import Lanes, lanes_for, withhold_on_page
from reviews.selectors.overview import cluster_labels, lane_order, rollout_test_counts
from reviews.selectors.queue import queue_place
from reviews.selectors.review_context import ReviewContext, items_from_fields, review_context
from reviews.services.judgments import RUBRIC


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
        values["invisible"] = tuple(find_invisible(rollout.patch_text + "\n" + test_names(rollout.test_outcomes)))
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
            render_file=shown_inline(rollout.extra_files),
        )
        key = lanes.key(rollout.index)
        extra_url = reverse("rollout-extra-files", args=[*group_args(group), key]) + "?view=unified"
        values["diff"] = diff_of(parsed, key, "unified", rollout.extra_files, group=group, extra_url=extra_url)
        scratch[rollout.index] = frozenset(t.file.path for t in values["diff"].extra)
    turns_lane, open_turns = opened_turns(query, shown, lanes)
    if turns_lane is not None:
        on_page[turns_lane]["open_turns"] = open_turns
    hit_lane, hit_bar = hit_bar_of(query, group, shown, lanes)
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
                grade=grade_view(grade),
                evidence_links=evidence_links(group, grade.evidence, lanes, deferred, scratch) if grade else (),
                mine=mine,
                grader_says=grader_says(mine, grade) if grade else "",
                others=tuple(others.get(rollout.index, [])),
                score_rows=tuple((guide.dimension(name), scores.get(name, "")) for name in RUBRIC),
                errors=tuple(m for f, m in (errors or {}).items() if f.split("-")[1:2] == [str(rollout.index)]),
                cluster_info=clusters.get(rollout.index),
                drop=drop_of(rollout.dropped, drop_policy),
                turn_weights=turn_weight_links(group, key, turn_weights.get(rollout.index)),
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
        task=task_head(group),
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
