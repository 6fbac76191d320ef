"""What one person may see and do on a group: blind or not, may they judge or adjudicate, what they said."""

from __future__ import annotations

from dataclasses import dataclass, field

from grading.models import Capability, Group, Membership
from reviews.models import Assignment, GroupReview, Judgment, JudgmentItem
from reviews.selectors.lanes import with_blind_fields


@dataclass
class ReviewContext:
    """How the group page treats this person: blind or not, may they judge, what they said."""

    assignment: Assignment | None
    judgment: Judgment | None  # their own review, once submitted
    review: GroupReview | None
    can_judge: bool
    can_adjudicate: bool
    blind: bool  # grader fields must not reach this person's HTML
    items: dict[int, dict] = field(default_factory=dict)  # rollout index -> their tier/rank/... (draft or submitted)
    others: list[Judgment] = field(default_factory=list)  # everyone's judgments, for adjudicators

    @property
    def version(self) -> int:
        return self.review.version if self.review else 0

    @property
    def judging(self) -> bool:
        return self.can_judge and self.judgment is None

    @property
    def order(self) -> list[int]:
        return list(self.assignment.order) if self.assignment and self.assignment.blind else []


def items_from_fields(draft: dict) -> dict[int, dict]:
    items: dict[int, dict] = {}
    for key, value in (draft or {}).items():
        parts = key.split("-")
        if len(parts) < 2 or not (parts[1].isascii() and parts[1].isdigit()):  # '²'.isdigit() is True
            continue
        item = items.setdefault(int(parts[1]), {"scores": {}})
        if parts[0] == "score" and len(parts) == 3:
            item["scores"][parts[2]] = value
        elif parts[0] == "cheat":
            item["cheat"] = str(value).lower() in ("on", "1", "true", "yes")
        else:
            item[parts[0]] = value
    return items


def review_context(*, user, membership: Membership, group: Group) -> ReviewContext:
    """Three queries: the person's assignment (with the project's blind fields), their
    judgments, the group's review state."""
    caps = membership.capabilities
    assignment = with_blind_fields(Assignment.objects.filter(group=group, reviewer=user)).first()
    own = list(Judgment.objects.filter(group=group, reviewer=user, kind=Judgment.Kind.REVIEW))
    review = GroupReview.objects.filter(group=group).first()
    judgment = own[0] if own else None
    open_blind = bool(assignment and assignment.is_open_blind)
    adjudicator = Capability.ADJUDICATE in caps and group.to_judge
    # The form is offered only where the queue says the group waits for an adjudicator, and
    # never to a party to it: someone who reviewed it or holds an open assignment on it
    # (selectors.adjudication.adjudication_refusal says the same when the form is posted).
    party = judgment is not None or bool(assignment and assignment.is_open)
    context = ReviewContext(
        assignment=assignment,
        judgment=judgment,
        review=review,
        can_judge=Capability.REVIEW in caps and assignment is not None and assignment.is_open and group.to_judge,
        can_adjudicate=adjudicator and not party and review is not None and review.needs_adjudication,
        blind=open_blind,
    )
    if judgment is not None:
        context.items = {
            item.rollout.index: {
                "tier": item.tier,
                "rank": str(item.rank),
                "cheat": item.cheat,
                "note": item.note,
                "scores": {k: str(v) for k, v in item.scores.items()},
            }
            for item in JudgmentItem.objects.filter(judgment=judgment)
            .select_related("rollout")
            .only("tier", "rank", "cheat", "note", "scores", "rollout__index")
        }
    elif assignment is not None and assignment.is_open:
        context.items = items_from_fields(assignment.draft)
    if adjudicator and not open_blind and review is not None and review.n_reviews:
        context.others = list(Judgment.objects.filter(group=group).select_related("reviewer").prefetch_related("items__rollout"))
    return context
