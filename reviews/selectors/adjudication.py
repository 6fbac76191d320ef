"""The adjudication queue: the groups whose reviewers disagree (and why, as each person may see it),
those an adjudicator settled, and who may settle one."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from grading.models import Group, Project
from grading.selectors.verdicts import shown_verdict_ids
from reviews.models import Assignment, GroupReview, Judgment, Reveal


def adjudication_queue(project: Project, *, include_done: bool = False) -> QuerySet:
    """The group ids waiting for an adjudicator (and, with `include_done`, those settled), by
    step and uid; a page of them is read by `adjudication_rows`. Ids first, rows second: a
    run's reviewed groups can nearly all be waiting, and sorting them with their
    disagreements and tasks attached was most of the page at 20,000 judgments
    (benchmarks/scale.py)."""
    reviews = GroupReview.objects.filter(group__run__project=project)
    reviews = (
        reviews.filter(Q(needs_adjudication=True) | Q(adjudicated=True))
        if include_done
        else reviews.filter(needs_adjudication=True)
    )
    return reviews.order_by("group__step_number", "group__uid").values_list("group_id", flat=True)


def adjudication_rows(group_ids: list[int]) -> list[GroupReview]:
    """The queue's rows for these groups, in the order given, with what the queue shows."""
    rows = {
        r.group_id: r
        for r in GroupReview.objects.filter(group_id__in=group_ids)
        .select_related("group__run", "group__task")
        .only(
            "group_id",
            "n_reviews",
            "needs_adjudication",
            "adjudicated",
            "disagreement",
            "group__uid",
            "group__step_number",
            "group__run__name",
            "group__run__jury",
            "group__task__instance_id",
        )
    }
    return [rows[g] for g in group_ids if g in rows]


def adjudication_aggregates() -> dict[str, Count]:
    return {
        "needs_adjudication": Count("pk", filter=Q(needs_adjudication=True)),
        "adjudicated": Count("pk", filter=Q(adjudicated=True)),
    }


def adjudication_counts(project: Project) -> dict[str, int]:
    """How many groups wait for an adjudicator and how many are settled, in one aggregate (the
    two are disjoint: a settled group no longer waits)."""
    return GroupReview.objects.filter(group__run__project=project).aggregate(**adjudication_aggregates())


class AdjudicationRefused(Exception):
    """This person may not adjudicate this group now: `status` is 403 (a party to the dispute)
    or 409 (the group does not wait for an adjudicator); `message` says which, for the page."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def is_party(*, group: Group, user) -> bool:
    """Whether `user` reviewed this group, or holds an open assignment to review it."""
    return (
        Judgment.objects.filter(group=group, reviewer=user, kind=Judgment.Kind.REVIEW).exists()
        or Assignment.objects.filter(group=group, reviewer=user, status=Assignment.Status.OPEN).exists()
    )


def adjudication_refusal(*, group: Group, user, review: GroupReview | None) -> AdjudicationRefused | None:
    """Why `user` may not adjudicate `group` now, or None. An adjudication happens only where
    the review state says the group waits for one, and never by a party to the dispute: the
    adjudication becomes the exported label, so a reviewer settling their own dispute would
    simply win it."""
    if is_party(group=group, user=user):
        return AdjudicationRefused(
            403,
            "You reviewed this group (or hold an open assignment on it): a party to the "
            "dispute cannot settle it. Another adjudicator has to.",
        )
    if review is None or not review.needs_adjudication:
        why = (
            "it is already adjudicated"
            if review is not None and review.adjudicated
            else "no two of its raters disagree"
            if review is not None and review.n_reviews
            else "nobody has reviewed it yet"
        )
        return AdjudicationRefused(
            409, f"This group does not wait for an adjudicator: {why}. Only groups in the adjudication queue are adjudicated."
        )
    return None


def _names_grader(disagreement) -> bool:
    return any(isinstance(d, dict) and "grader" in (d.get("between") or []) for d in disagreement or [])


@dataclass(frozen=True)
class AdjudicationRow:
    """A row of the adjudication queue as this person may see it."""

    group: Group
    n_reviews: int
    adjudicated: bool
    disagreement: list  # consensus.disagreements(...) as stored; empty where withheld
    hidden_reason: str = ""  # why the disagreement is withheld from this person, or ""


@dataclass(frozen=True)
class DisagreementsShown:
    rows: list[AdjudicationRow]  # one per review given, in its order
    unlogged: list[tuple[int, int | None]]  # (group, its latest verdict) shown naming the grader, no Reveal yet


def disagreements_for(*, user, reviews: list[GroupReview]) -> DisagreementsShown:
    """The adjudication queue's "why" column, as this person may see it: a read (the showing
    is logged by services.judgments.reveal_disagreements).

    Which rollouts a reviewer and the grader disagree on is a grader field. It is withheld
    (`hidden_reason` set, `disagreement` empty) on groups where the person holds an open
    blind assignment. Of those shown that name the grader, `unlogged` are the groups whose
    shown verdict (grading.selectors.verdicts.shown_verdict) this person has no Reveal of. Two queries
    and one a run on the page (two where a run's jury waits)."""
    ids = [r.group_id for r in reviews]
    blind_here = set(Assignment.objects.filter(reviewer=user, group_id__in=ids).open_blind().values_list("group_id", flat=True))
    rows = [
        AdjudicationRow(r.group, r.n_reviews, r.adjudicated, [], "withheld: you are judging this group blind")
        if r.group_id in blind_here
        else AdjudicationRow(r.group, r.n_reviews, r.adjudicated, r.disagreement)
        for r in reviews
    ]
    shown = [r.group_id for r in reviews if r.group_id not in blind_here and _names_grader(r.disagreement)]
    if not shown:
        return DisagreementsShown(rows, [])
    latest = shown_verdict_ids(r.group for r in reviews if r.group_id in set(shown))
    seen = set(Reveal.objects.filter(user=user, group_id__in=shown).values_list("group_id", "verdict_id"))
    return DisagreementsShown(rows, [(g, latest.get(g)) for g in shown if (g, latest.get(g)) not in seen])


def group_review(group: Group) -> GroupReview | None:
    """The group's review state (how many reviewed it, whether it waits for an adjudicator)."""
    return GroupReview.objects.filter(group=group).first()
