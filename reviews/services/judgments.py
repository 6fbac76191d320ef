"""Writes of the review desk: drafts, judgments, adjudications, reveals.

Every submit locks the group's `GroupReview` row first, so two people submitting on one
group are serialised: each gets one stored judgment, and whoever came second learns that
someone else submitted while they were judging. The same person submitting twice (two
tabs, a double click) gets `JudgmentConflict` and their first judgment stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from grading.grader.base import RUBRIC, SCORE_RANGE
from grading.method.tiers import TIERS
from grading.models import CheatDecision, Group, Rollout, RolloutGrade, Verdict
from reviews.models import Assignment, GroupReview, Judgment, JudgmentItem, Reveal
from reviews.stats import consensus

RUBRIC_LABELS = {  # the grader's five dimensions (docs/method.md §2), as people read them
    "solution_fit": "Solution fit",
    "implementation_precision": "Implementation precision",
    "minimality": "Minimality of change",
    "side_effect_avoidance": "Side-effect avoidance",
    "codebase_consistency": "Codebase consistency",
}
MAX_DRAFT_BYTES = 64 * 1024


class JudgmentError(ValueError):
    """The judgment cannot be stored as given; `errors` maps a field name to what is wrong."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class JudgmentConflict(Exception):
    """This person (or, for adjudications, anyone) already stored this judgment."""

    def __init__(self, existing: Judgment):
        super().__init__(f"{existing.reviewer} already submitted a {existing.kind} of this group at {existing.created_at:%Y-%m-%d %H:%M} UTC")
        self.existing = existing


@dataclass(frozen=True)
class ItemInput:
    index: int
    tier: str
    rank: int | None = None
    cheat: bool = False
    scores: dict = field(default_factory=dict)
    note: str = ""


@dataclass
class SubmitResult:
    judgment: Judgment
    # Judgments others stored on this group after the submitter loaded it (the page's version).
    concurrent: list[Judgment]


def _checked_items(group: Group, items: list[ItemInput]) -> tuple[dict[int, Rollout], list[ItemInput]]:
    """Every passing rollout judged exactly once with a valid tier; ranks consistent with tiers."""
    rollouts = {r.index: r for r in Rollout.objects.filter(group=group).only("id", "index", "passed")}
    passing = {i for i, r in rollouts.items() if r.passed is True}
    errors: dict[str, str] = {}
    seen: set[int] = set()
    for item in items:
        if item.index not in rollouts:
            errors[f"tier-{item.index}"] = f"group has no rollout #{item.index}"
        elif item.index not in passing:
            errors[f"tier-{item.index}"] = f"rollout #{item.index} did not pass; only passing rollouts are judged"
        elif item.index in seen:
            errors[f"tier-{item.index}"] = f"rollout #{item.index} judged twice"
        elif item.tier not in TIERS:
            errors[f"tier-{item.index}"] = f"tier must be T1, T2 or T3, got {item.tier!r}"
        elif item.rank is not None and item.rank < 1:
            errors[f"rank-{item.index}"] = "rank must be 1 or more"
        for name, score in item.scores.items():
            if name not in RUBRIC or not (isinstance(score, int) and SCORE_RANGE[0] <= score <= SCORE_RANGE[1]):
                errors[f"score-{item.index}-{name}"] = f"rubric scores are whole numbers {SCORE_RANGE[0]} to {SCORE_RANGE[1]}"
        seen.add(item.index)
    for index in sorted(passing - seen):
        errors[f"tier-{index}"] = f"rollout #{index} passed and needs a tier"
    if errors:
        raise JudgmentError(errors)
    given = [i.rank is not None for i in items]
    if any(given) and not all(given):
        missing = ", ".join(f"#{i.index}" for i in items if i.rank is None)
        raise JudgmentError({"rank": f"rank all passing rollouts or none (missing: {missing})"})
    if not any(given):
        derived = consensus.ranks_from_tiers({i.index: i.tier for i in items})
        items = [ItemInput(i.index, i.tier, derived[i.index], i.cheat, i.scores, i.note) for i in items]
    problems = consensus.rank_contradictions({i.index: (i.tier, i.rank) for i in items})
    if problems:
        raise JudgmentError({"rank": "ranks contradict tiers: " + "; ".join(problems[:3])})
    return rollouts, items


def grader_ranking(group: Group) -> tuple[Verdict | None, consensus.Ranking]:
    verdict = Verdict.objects.filter(group=group).first()
    if verdict is None or verdict.status != Verdict.Status.VALID:
        return verdict, {}
    grades = RolloutGrade.objects.filter(verdict=verdict).values_list("rollout__index", "tier", "rank")
    return verdict, {index: (tier, rank) for index, tier, rank in grades}


def human_rankings(group: Group) -> dict[Judgment, consensus.Ranking]:
    rankings: dict[Judgment, consensus.Ranking] = {}
    judgments = {j.pk: j for j in Judgment.objects.filter(group=group).select_related("reviewer")}
    for judgment in judgments.values():
        rankings[judgment] = {}
    for judgment_id, index, tier, rank in JudgmentItem.objects.filter(judgment__group=group).values_list(
        "judgment_id", "rollout__index", "tier", "rank"
    ):
        rankings[judgments[judgment_id]][index] = (tier, rank)
    return rankings


def refresh_review_state(*, group: Group, review: GroupReview | None = None) -> GroupReview:
    """Recompute whether the group waits for an adjudicator: two reviewers, or a reviewer and
    the grader, apart by a tier or on the best rollout; settled once adjudicated."""
    review = review or GroupReview.objects.get_or_create(group=group)[0]
    rankings = human_rankings(group)
    reviews = {j.reviewer.username: r for j, r in rankings.items() if j.kind == Judgment.Kind.REVIEW}
    adjudicated = any(j.kind == Judgment.Kind.ADJUDICATION for j in rankings)
    raters = dict(reviews)
    if reviews:
        _, by_grader = grader_ranking(group)
        if by_grader:
            raters["grader"] = by_grader
    review.n_reviews = len(reviews)
    review.disagreement = consensus.disagreements(raters)
    review.adjudicated = adjudicated
    review.needs_adjudication = bool(review.disagreement) and not adjudicated
    review.save(update_fields=["n_reviews", "disagreement", "adjudicated", "needs_adjudication", "updated_at"])
    return review


def log_reveal(*, group: Group, user, verdict: Verdict | None, reason: str) -> Reveal:
    return Reveal.objects.create(group=group, user=user, verdict=verdict, reason=reason)


@transaction.atomic
def submit_judgment(
    *, reviewer, group: Group, items: list[ItemInput], note: str = "", seen_version: int | None = None,
    kind: str = Judgment.Kind.REVIEW, reason: str = "", seconds_spent: int | None = None,
) -> SubmitResult:
    """Store one person's judgment of a group, all items or none.

    Raises JudgmentError (field → message) for an incomplete or inconsistent judgment and
    JudgmentConflict when this person already judged the group (or it is already adjudicated).
    """
    GroupReview.objects.get_or_create(group=group)
    review = GroupReview.objects.select_for_update().get(pk=group.pk)
    existing = Judgment.objects.filter(group=group, kind=kind)
    if kind == Judgment.Kind.REVIEW:
        existing = existing.filter(reviewer=reviewer)
    elif kind == Judgment.Kind.ADJUDICATION:
        if reason not in Judgment.Reason.values:
            raise JudgmentError({"reason": "an adjudication needs a reason code"})
    else:
        raise JudgmentError({"kind": f"unknown judgment kind {kind!r}"})
    first = existing.select_related("reviewer").first()
    if first is not None:
        raise JudgmentConflict(first)
    rollouts, items = _checked_items(group, items)

    assignment = (
        Assignment.objects.select_for_update().filter(group=group, reviewer=reviewer).first()
        if kind == Judgment.Kind.REVIEW else None
    )
    if assignment is not None and assignment.status == Assignment.Status.SKIPPED:
        raise JudgmentError({"assignment": "you skipped this group; it is no longer yours to judge"})
    blind = bool(assignment and assignment.blind and not assignment.revealed_early)
    concurrent = []
    if seen_version is not None and review.version != seen_version:
        concurrent = list(
            Judgment.objects.filter(group=group).exclude(reviewer=reviewer).select_related("reviewer").order_by("created_at")
        )
    try:
        with transaction.atomic():
            judgment = Judgment.objects.create(
                group=group, reviewer=reviewer, kind=kind, assignment=assignment, blind=blind, note=note[:20_000],
                reason=reason, seconds_spent=seconds_spent,
            )
    except IntegrityError:  # the constraints are the last word if a writer got past the lock
        raise JudgmentConflict(Judgment.objects.filter(group=group, kind=kind).select_related("reviewer").first()) from None
    JudgmentItem.objects.bulk_create(
        JudgmentItem(judgment=judgment, rollout=rollouts[i.index], tier=i.tier, rank=i.rank, cheat=i.cheat,
                     scores=i.scores, note=i.note[:5000])
        for i in items
    )
    if assignment is not None and assignment.status != Assignment.Status.SUBMITTED:
        assignment.status = Assignment.Status.SUBMITTED
        assignment.finished_at = timezone.now()
        assignment.draft = {}
        assignment.save(update_fields=["status", "finished_at", "draft"])
    _flag_cheats(judgment=judgment, rollouts=rollouts, items=items)
    verdict = Verdict.objects.filter(group=group).first()
    if verdict is not None:
        log_reveal(group=group, user=reviewer, verdict=verdict, reason=Reveal.Reason.SUBMITTED)
    review.version += 1
    review.save(update_fields=["version", "updated_at"])
    refresh_review_state(group=group, review=review)
    return SubmitResult(judgment=judgment, concurrent=concurrent)


def _flag_cheats(*, judgment: Judgment, rollouts: dict[int, Rollout], items: list[ItemInput]) -> None:
    """A person's cheat call goes to the audit queue like any other signal; it changes no
    reward until an auditor confirms it (docs/method.md §1)."""
    flagged = [rollouts[i.index] for i in items if i.cheat]
    if not flagged:
        return
    pending = set(
        CheatDecision.objects.filter(rollout__in=flagged, source=CheatDecision.Source.REVIEWER, confirmed__isnull=True)
        .values_list("rollout_id", flat=True)
    )
    notes = {rollouts[i.index].pk: i.note for i in items if i.cheat}
    CheatDecision.objects.bulk_create(
        CheatDecision(rollout=r, source=CheatDecision.Source.REVIEWER,
                      reason=f"flagged by {judgment.reviewer.username}" + (f": {notes[r.pk]}" if notes[r.pk] else ""))
        for r in flagged if r.pk not in pending
    )


def save_draft(*, assignment: Assignment, data: dict) -> Assignment:
    """Autosave of the judging form. Only an open assignment has a draft."""
    import json

    if assignment.status != Assignment.Status.OPEN:
        raise ValueError("this assignment is already finished")
    if len(json.dumps(data)) > MAX_DRAFT_BYTES:
        raise ValueError(f"draft larger than {MAX_DRAFT_BYTES // 1024} KB")
    assignment.draft = data
    assignment.draft_saved_at = timezone.now()
    assignment.save(update_fields=["draft", "draft_saved_at"])
    return assignment


@transaction.atomic
def reveal_early(*, assignment: Assignment) -> Assignment:
    """The reviewer chose to see the grader before submitting: their judgment will not count as blind."""
    assignment = Assignment.objects.select_for_update().select_related("group").get(pk=assignment.pk)
    if not assignment.revealed_early:
        assignment.revealed_early = True
        assignment.save(update_fields=["revealed_early"])
    log_reveal(group=assignment.group, user=assignment.reviewer, verdict=Verdict.objects.filter(group=assignment.group).first(),
               reason=Reveal.Reason.EARLY)
    return assignment
