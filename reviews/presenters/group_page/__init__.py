"""The group page and its rollout partials as view models: what the templates render
(templates/reviews/group.html, rollout_part.html), read and assembled here so the views
only parse the request, call one of these and render. `group_page` composes the page from
its parts, each a module of this package: the head (`head`), the lanes (`lanes`), their
diffs (`diffs`), the verdict shown (`verdict`) and what it cites (`evidence`), a search
hit's turns (`turns`) and this person's review (`judging`); the partials the page loads on
demand are `parts`.

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
from typing import TYPE_CHECKING, Any

from grading.method.partial import drop_of
from grading.method.project_guides import guide_for
from grading.method.tiers import TIERS
from grading.models import Group, Membership
from grading.selectors.rollouts import rollouts_with_patches
from grading.selectors.verdicts import turn_weights_of
from reviews.models import Judgment
from reviews.presenters.group_page.diffs import DIFF_INLINE_CHARS, inline_diffs
from reviews.presenters.group_page.head import GroupHead, TaskHead, group_head, task_head
from reviews.presenters.group_page.judging import desk_for, place_in_queue
from reviews.presenters.group_page.lanes import Lane, invisible_in, lane_of, shown_rollouts
from reviews.presenters.group_page.turns import TURNS_PER_PAGE, hit_bar_of, opened_turns
from reviews.presenters.group_page.verdict import differential_of, grade_fields, shown_verdict, verdict_checks
from reviews.selectors.judge_panel import start_rankings
from reviews.selectors.lanes import Lanes, lanes_for, withhold_on_page
from reviews.selectors.overview import cluster_labels, lane_order, rollout_test_counts
from reviews.selectors.review_context import ReviewContext

if TYPE_CHECKING:
    from grading.selectors.rollouts import RolloutWithPatch


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
    # The differential matrix among the passing patches, with its sentences; None while hidden.
    differential: dict | None = None
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
    desk = desk_for(user=user, group=group, membership=membership, query=query, form_data=form_data)
    review = desk.review
    guide = guide_for(group.run.project_id)
    # Passing lanes first, still in the reviewer's own shuffle when blind; failing after.
    rollouts = lane_order(rollouts_with_patches(group, highlighted_up_to=DIFF_INLINE_CHARS), review.order)
    lanes = lanes_for(user=user, group=group, assignment=review.assignment, indexes=[r.index for r in rollouts])
    withhold_on_page(rollouts, lanes)  # a blind judge's page: no source, cost or producer metadata
    clusters = cluster_labels(rollouts, lanes)
    graded = shown_verdict(user=user, group=group, review=review, browse=desk.browse)
    only = query.get("only", "all")
    on_page = shown_rollouts(rollouts, only)
    inline = inline_diffs(group, on_page, lanes)
    extras = {r.index: {"invisible": invisible_in(r), **inline.values[r.index]} for r in on_page}
    turns_lane, open_turns = opened_turns(query, on_page, lanes)
    if turns_lane is not None:
        extras[turns_lane]["open_turns"] = open_turns
    hit_lane, hit_bar = hit_bar_of(query, group, on_page, lanes)
    if hit_lane is not None:
        extras[hit_lane]["hit_bar"] = hit_bar
    turn_weights = turn_weights_of(group, graded.grades)  # grader fields: empty where the verdict is hidden
    drop_policy = group.run.drop_policy or {}

    def lane_for(rollout: RolloutWithPatch) -> Lane:
        grade = graded.grades.get(rollout.index)
        return lane_of(
            rollout,
            lanes,
            cluster_info=clusters.labels.get(rollout.index),
            drop=drop_of(rollout.dropped, drop_policy),
            test_counts=rollout_test_counts(rollout.test_outcomes),
            **grade_fields(group, grade, lanes, lanes.key(rollout.index), turn_weights.get(rollout.index), inline),
            **desk.lane_fields(rollout.index, grade, guide, errors),
            **extras.get(rollout.index, {}),
        )

    all_lanes = tuple(lane_for(rollout) for rollout in rollouts)
    by_index = {lane.index: lane for lane in all_lanes}
    shown_indexes = {r.index for r in on_page}
    rankings, sources = start_rankings(others=review.others, grades=graded.grades, lanes=lanes) if desk.adjudicating else ({}, [])
    return GroupPage(
        project=group.run.project,
        run=group.run,
        group=group_head(group),
        task=task_head(group),
        rollouts=tuple(by_index[r.index] for r in on_page),
        all_rollouts=all_lanes,
        has_clusters=bool(clusters.labels),
        n_clusters=clusters.distinct,
        n_failing=sum(1 for r in on_page if r.passed is False),
        n_all=len(rollouts),
        only=only,
        diff_view="unified",
        hit_lane=hit_lane,
        turns_per_page=TURNS_PER_PAGE,
        lanes=lanes,
        drops=tuple(lane for lane in all_lanes if lane.drop),
        shown_errors=lanes.errors_from_storage(errors or {}),
        verdict=graded.verdict,
        review=review,
        membership=membership,
        guide=guide,
        tier_guide=tuple((t, guide.tier(t)) for t in TIERS),
        browse=desk.browse,
        errors=errors or {},
        reasons=Judgment.Reason.choices,
        adjudication=desk.adjudication,
        conflict=conflict,
        n_passing=sum(1 for r in rollouts if r.passed),
        tiers=tuple(TIERS),
        n_tiered=sum(1 for lane in all_lanes if lane.passed and lane.mine.get("tier")),
        show_mine=bool(review.judging or desk.adjudicating or review.judgment is not None),
        form_mode_adjudicate=desk.adjudicating,
        start_rankings=rankings,
        start_sources=sources,
        off_page=tuple(lane for lane in all_lanes if lane.passed and lane.index not in shown_indexes),
        queue_place=place_in_queue(desk, group=group, user=user, membership=membership),
        group_note=desk.fields.get("note", ""),
        draft_reason=desk.fields.get("reason", ""),
        browse_reveal=graded.browse_reveal,
        settled=graded.settled,
        checks=verdict_checks(graded.verdict, lanes),
        differential=differential_of(graded.verdict, lanes),
    )
