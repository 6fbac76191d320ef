"""The review desk's side of the group page: this person's review of the group (their
assignment, their judgment, their draft or the refused form shown again), whether they
adjudicate it, everyone's judgments by rollout, a lane's judging fields and their place in
the queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from grading.models import Group, Membership
from reviews.access import sees_why_next
from reviews.forms import draft_fields
from reviews.models import AdjudicationDraft, Judgment
from reviews.selectors.browse import browse_choice
from reviews.selectors.judge_panel import grader_says
from reviews.selectors.queue import queue_place
from reviews.selectors.review_context import ReviewContext, items_from_fields, review_context
from reviews.services.judgments import RUBRIC


@dataclass(frozen=True)
class Desk:
    """This person's review of the group as the page shows it."""

    review: ReviewContext
    browse: Any  # reviews.selectors.browse.browse_choice: browsing a graded group outside an assignment
    fields: Mapping  # the group's judging fields: the refused form's, the adjudicator's draft or the assignment's
    adjudicating: bool
    others: Mapping[int, list[dict]]  # rollout index -> everyone's judgments of it

    @property
    def adjudication(self) -> Judgment | None:
        return next((j for j in self.review.others if j.kind == Judgment.Kind.ADJUDICATION), None)

    def lane_fields(self, index: int, grade, guide, errors: Mapping | None) -> dict:
        """A lane's judging fields: this person's tier, rank, scores and note, what the
        grader says otherwise, everyone's judgments of it and the refused form's errors."""
        mine = self.review.items.get(index, {})
        scores = mine.get("scores", {})
        return {
            "mine": mine,
            "grader_says": grader_says(mine, grade) if grade else "",
            "others": tuple(self.others.get(index, [])),
            "score_rows": tuple((guide.dimension(name), scores.get(name, "")) for name in RUBRIC),
            "errors": tuple(m for f, m in (errors or {}).items() if f.split("-")[1:2] == [str(index)]),
        }


def desk_for(*, user, group: Group, membership: Membership, query: Mapping, form_data: Mapping | None) -> Desk:
    """This person's review of `group`; `form_data`: a refused judgment's fields, shown again."""
    review = review_context(user=user, membership=membership, group=group)
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
    return Desk(review=review, browse=browse, fields=fields_, adjudicating=adjudicating, others=_others_by_rollout(review))


def _others_by_rollout(review: ReviewContext) -> dict[int, list[dict]]:
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
    return others


def place_in_queue(desk: Desk, *, group: Group, user, membership: Membership) -> Any:
    """Where the group stands in this person's queue (and why it came next, to whom may
    see that); None outside an assignment."""
    assignment = desk.review.assignment
    if not assignment:
        return None
    return queue_place(assignment=assignment, group=group, reviewer=user, explain=sees_why_next(membership, assignment))
