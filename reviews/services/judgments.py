"""Writes of the review desk: drafts, judgments, adjudications, reveals.

Every submit locks the group's `GroupReview` row first, so two people submitting on one
group are serialised: each gets one stored judgment, and whoever came second learns that
someone else submitted while they were judging. The same person submitting twice (two
tabs, a double click) gets `JudgmentConflict` and their first judgment stays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils import timezone

from grading.method.guide import RUBRIC, SCORE_RANGE
from grading.method.tiers import TIERS
from grading.models import CheatDecision, Group, Rollout, Verdict
from grading.selectors.verdicts import shown_verdict
from grading.verdicts.deliberation import PersonRanking, settle_with_person
from reviews.formats.labeled import citations
from reviews.models import AdjudicationDraft, Assignment, GroupReview, Judgment, JudgmentItem, Reveal
from reviews.selectors.adjudication import AdjudicationRow, adjudication_refusal, disagreements_for
from reviews.selectors.rankings import grader_ranking, human_rankings
from reviews.services.calibration import schedule_warm
from reviews.services.queue import refresh_awaits_review
from reviews.stats import consensus

MAX_DRAFT_BYTES = 64 * 1024


class JudgmentError(ValueError):
    """The judgment cannot be stored as given; `errors` maps a field name to what is wrong."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


class JudgmentConflict(Exception):
    """This person (or, for adjudications, anyone) already stored this judgment."""

    def __init__(self, existing: Judgment):
        super().__init__(
            f"{existing.reviewer} already submitted a {existing.kind} of this group at {existing.created_at:%Y-%m-%d %H:%M} UTC"
        )
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


@dataclass(frozen=True)
class _CheckedItem(ItemInput):
    """An item that passed `_checked_items`: its rank filled (from its tier where it was blank)."""

    rank: int = 0


def _checked_items(
    group: Group,
    items: list[ItemInput],
    names: Mapping[int, str] | None = None,
) -> tuple[dict[int, Rollout], list[_CheckedItem]]:
    """Every passing rollout judged exactly once with a valid tier; ranks consistent with
    tiers, blank ones derived from them. Messages name a rollout as `names` does (a blind
    judge's lane labels), else "#<index>"; never by a form field's name."""

    def name(index: int) -> str:
        return names.get(index, "?") if names is not None else f"#{index}"

    rollouts = {r.index: r for r in Rollout.objects.filter(group=group).only("id", "index", "passed")}
    passing = {i for i, r in rollouts.items() if r.passed is True}
    errors: dict[str, str] = {}
    seen: set[int] = set()
    for item in items:
        if item.index not in rollouts:
            errors[f"tier-{item.index}"] = f"group has no rollout {name(item.index)}"
        elif item.index not in passing:
            errors[f"tier-{item.index}"] = f"rollout {name(item.index)} did not pass; only passing rollouts are judged"
        elif item.index in seen:
            errors[f"tier-{item.index}"] = f"rollout {name(item.index)} judged twice"
        elif item.tier not in TIERS:
            errors[f"tier-{item.index}"] = f"rollout {name(item.index)}: the tier must be T1, T2 or T3, got {item.tier!r}"
        elif item.rank is not None and item.rank < 1:
            errors[f"rank-{item.index}"] = f"rollout {name(item.index)}: a rank is 1 or more (or blank: from its tier)"
        for dimension, score in item.scores.items():
            if dimension not in RUBRIC or not (isinstance(score, int) and SCORE_RANGE[0] <= score <= SCORE_RANGE[1]):
                errors[f"score-{item.index}-{dimension}"] = (
                    f"rollout {name(item.index)}: rubric scores are whole numbers {SCORE_RANGE[0]} to {SCORE_RANGE[1]}"
                )
        seen.add(item.index)
    for index in sorted(passing - seen):
        errors[f"tier-{index}"] = f"rollout {name(index)} passed and needs a tier"
    if errors:
        raise JudgmentError(errors)
    # Ranks are optional per rollout: blank ones follow tiers (consensus.fill_ranks). Those
    # given may not contradict the tiers; the filled ones cannot.
    given = {i.index: (i.tier, i.rank) for i in items if i.rank is not None}
    problems = consensus.rank_contradictions(given, name)
    if problems:
        raise JudgmentError({"rank": "ranks contradict tiers: " + "; ".join(problems[:3])})
    ranks = consensus.fill_ranks({i.index: (i.tier, i.rank) for i in items})
    return rollouts, [_CheckedItem(i.index, i.tier, ranks[i.index], i.cheat, i.scores, i.note) for i in items]


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


def reveal_disagreements(*, user, reviews: list[GroupReview]) -> list[AdjudicationRow]:
    """The adjudication queue's "why" column as this person may see it (selectors.adjudication.
    disagreements_for), with each showing that names the grader logged as a `Reveal` (browse),
    so the queue never serves that group to them blind afterwards and a judgment they make on
    it is not stored as blind. Three queries and one a run on the page."""
    shown = disagreements_for(user=user, reviews=reviews)
    Reveal.objects.bulk_create(
        Reveal(group_id=group_id, user=user, verdict_id=verdict_id, reason=Reveal.Reason.BROWSE)
        for group_id, verdict_id in shown.unlogged
    )
    return shown.rows


@transaction.atomic
def submit_judgment(
    *,
    reviewer,
    group: Group,
    items: list[ItemInput],
    note: str = "",
    seen_version: int | None = None,
    kind: str = Judgment.Kind.REVIEW,
    reason: str = "",
    seconds_spent: int | None = None,
    names: Mapping[int, str] | None = None,
) -> SubmitResult:
    """Store one person's judgment of a group, all items or none. `names`: how refusals name
    the rollouts (a blind judge's lane labels, reviews.selectors.lanes); "#<index>" without.

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
    if kind == Judgment.Kind.ADJUDICATION:
        refusal = adjudication_refusal(group=group, user=reviewer, review=review)
        if refusal is not None:
            raise refusal
    rollouts, checked = _checked_items(group, items, names)

    assignment = (
        Assignment.objects.select_for_update().filter(group=group, reviewer=reviewer).first()
        if kind == Judgment.Kind.REVIEW
        else None
    )
    if assignment is not None and assignment.status == Assignment.Status.SKIPPED:
        raise JudgmentError({"assignment": "you skipped this group; it is no longer yours to judge"})
    # Blind only if no grader field ever reached this person on this group: an early reveal,
    # or a Reveal logged anywhere else (a page outside the assignment, the adjudication queue's
    # reasons) before this submit.
    blind = bool(
        assignment
        and assignment.blind
        and not assignment.revealed_early
        and not Reveal.objects.filter(group=group, user=reviewer).exists()
    )
    concurrent = []
    if seen_version is not None and review.version != seen_version:
        concurrent = list(
            Judgment.objects.filter(group=group).exclude(reviewer=reviewer).select_related("reviewer").order_by("created_at")
        )
    try:
        with transaction.atomic():
            judgment = Judgment.objects.create(
                group=group,
                reviewer=reviewer,
                kind=kind,
                assignment=assignment,
                blind=blind,
                note=note[:20_000],
                reason=reason,
                seconds_spent=seconds_spent,
            )
    except IntegrityError:  # the constraints are the last word if a writer got past the lock
        stored = Judgment.objects.filter(group=group, kind=kind).select_related("reviewer").first()
        assert stored is not None  # the row the constraint refused this one for
        raise JudgmentConflict(stored) from None
    JudgmentItem.objects.bulk_create(
        JudgmentItem(
            judgment=judgment,
            rollout=rollouts[i.index],
            tier=i.tier,
            rank=i.rank,
            cheat=i.cheat,
            scores=i.scores,
            note=i.note[:5000],
        )
        for i in checked
    )
    if kind == Judgment.Kind.ADJUDICATION:  # settled: nobody's draft of this adjudication is needed any more
        AdjudicationDraft.objects.filter(group=group).delete()
    if assignment is not None and assignment.status != Assignment.Status.SUBMITTED:
        assignment.status = Assignment.Status.SUBMITTED
        assignment.finished_at = timezone.now()
        assignment.draft = {}
        assignment.save(update_fields=["status", "finished_at", "draft"])
        refresh_awaits_review(project=group.run.project, group_ids=[group.pk])
    _flag_cheats(judgment=judgment, rollouts=rollouts, items=checked)
    verdict = shown_verdict(group)
    if verdict is not None:
        log_reveal(group=group, user=reviewer, verdict=verdict, reason=Reveal.Reason.SUBMITTED)
    # A jury that waits for a person on this group takes the first judgment as its verdict.
    settle_with_person(
        group=group,
        ranking=PersonRanking(
            judgment_id=judgment.pk,
            person=reviewer.username,
            items={i.index: (i.tier, i.rank, i.scores) for i in checked},
        ),
    )
    review.version += 1
    review.save(update_fields=["version", "updated_at"])
    refresh_review_state(group=group, review=review)
    schedule_warm(run_id=group.run_id)  # the calibration figures this judgment changes
    return SubmitResult(judgment=judgment, concurrent=concurrent)


def _flag_cheats(*, judgment: Judgment, rollouts: dict[int, Rollout], items: Sequence[ItemInput]) -> None:
    """A person's cheat call goes to the audit queue like any other signal; it changes no
    reward until an auditor confirms it (docs/method.md §1)."""
    flagged = [rollouts[i.index] for i in items if i.cheat]
    if not flagged:
        return
    author = judgment.reviewer.username
    # One open signal per rollout and person: a second reviewer's call is theirs, with their note.
    pending = set(
        CheatDecision.objects.filter(
            rollout__in=flagged, source=CheatDecision.Source.REVIEWER, confirmed__isnull=True, author=author
        ).values_list("rollout_id", flat=True)
    )
    notes = {rollouts[i.index].pk: i.note for i in items if i.cheat}
    CheatDecision.objects.bulk_create(
        CheatDecision(
            rollout=r,
            source=CheatDecision.Source.REVIEWER,
            author=author,
            reason=f"flagged by {author}" + (f": {notes[r.pk]}" if notes[r.pk] else ""),
            evidence=[{**c, "note": notes[r.pk]} for c in citations(notes[r.pk], r.index)],
        )
        for r in flagged
        if r.pk not in pending
    )


class AssignmentFinished(ValueError):
    """A draft for an assignment that is already submitted or skipped."""


def save_draft(*, assignment: Assignment, data: dict) -> Assignment:
    """Autosave of the judging form. Only an open assignment has a draft.

    The write is conditional on the assignment still being open in the database: an autosave
    that loses the race against the submit (the page's 600 ms timer or its unload beacon)
    must not write its draft back onto the finished assignment.
    """
    import json

    if assignment.status != Assignment.Status.OPEN:
        raise AssignmentFinished("this assignment is already finished")
    if len(json.dumps(data)) > MAX_DRAFT_BYTES:
        raise ValueError(f"draft larger than {MAX_DRAFT_BYTES // 1024} KB")
    saved_at = timezone.now()
    if not Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.OPEN).update(draft=data, draft_saved_at=saved_at):
        raise AssignmentFinished("this assignment is already finished")
    assignment.draft, assignment.draft_saved_at = data, saved_at
    return assignment


def save_adjudication_draft(*, group: Group, user, data: dict) -> AdjudicationDraft:
    """Autosave of the adjudication form (the caller checked that this person may adjudicate the group)."""
    import json

    if len(json.dumps(data)) > MAX_DRAFT_BYTES:
        raise ValueError(f"draft larger than {MAX_DRAFT_BYTES // 1024} KB")
    draft, _ = AdjudicationDraft.objects.update_or_create(group=group, user=user, defaults={"data": data})
    return draft


@transaction.atomic
def reveal_early(*, assignment: Assignment) -> Assignment:
    """The reviewer chose to see the grader before submitting: their judgment will not count as blind."""
    assignment = Assignment.objects.select_for_update().select_related("group").get(pk=assignment.pk)
    if not assignment.revealed_early:
        assignment.revealed_early = True
        assignment.save(update_fields=["revealed_early"])
    log_reveal(
        group=assignment.group,
        user=assignment.reviewer,
        verdict=shown_verdict(assignment.group),
        reason=Reveal.Reason.EARLY,
    )
    return assignment
