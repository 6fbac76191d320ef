"""What a person browsing a graded group outside an assignment is offered (the reads behind
reviews/services/browse.py): whether their role hides the grader's verdict when browsing, the
choice the group page offers instead, and why the queue's rules would refuse them the group blind.

Who chooses: members whose role may review and nothing more (`hides_verdict_when_browsing`:
the reviewer role). Auditors, adjudicators and admins need the grader's verdict for their
work (cheat signals, disputes, calibration) and keep seeing it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef

from grading.models import Capability, Group, Membership, Verdict
from reviews.models import Assignment, Judgment, Reveal, ReviewPolicy
from reviews.selectors.queue import policy_for, queue_groups

# Capabilities whose work needs the grader's verdict: holders see it when browsing.
SEES_VERDICT = frozenset({Capability.AUDIT, Capability.ADJUDICATE, Capability.MANAGE})


@dataclass(frozen=True)
class BrowseChoice:
    """What the group page offers a reviewer outside an assignment, instead of the verdict."""

    has_verdict: bool  # a verdict exists and stays hidden until they choose
    refusal: str  # why they cannot judge it blind; "" when they can
    settled: bool = False  # no grader's verdict, but one settled without a model call (identical patches)


def hides_verdict_when_browsing(membership: Membership) -> bool:
    caps = membership.capabilities
    return Capability.REVIEW in caps and not (caps & SEES_VERDICT)


_ASSIGNMENT_REFUSALS: dict[str, str] = {
    Assignment.Status.OPEN: "",
    Assignment.Status.SUBMITTED: "you already judged this group",
    Assignment.Status.SKIPPED: "you skipped this group; it is not served to you again",
}


def _refusal(*, group: Group, reviewer, assignment: Assignment | None, judged: bool, revealed: bool, policy: ReviewPolicy) -> str:
    if not group.to_judge:
        return "only mixed groups and comparisons' groups are judged"
    if assignment is not None:
        return _ASSIGNMENT_REFUSALS[assignment.status]
    if judged:
        return "you already judged this group"
    if revealed:
        return "you have seen the grader's verdict on this group, so your judgment could not be blind"
    if not queue_groups(project=group.run.project, reviewer=reviewer, run=group.run, policy=policy).filter(pk=group.pk).exists():
        return (
            "it already has the reviewers it wants (the queue gives a second reviewer only to the policy's "
            "overlap share of groups)"
        )
    return ""


def claim_refusal(*, group: Group, reviewer, policy: ReviewPolicy | None = None) -> str:
    """Why `reviewer` may not take `group` from the queue now, or "" when they may: the queue's
    own rules (queue_groups: mixed, never served or skipped, never revealed, still wanting a reviewer)."""
    return _refusal(
        group=group,
        reviewer=reviewer,
        assignment=Assignment.objects.filter(group=group, reviewer=reviewer).first(),
        judged=Judgment.objects.filter(group=group, reviewer=reviewer).exists(),
        revealed=Reveal.objects.filter(group=group, user=reviewer).exists(),
        policy=policy or policy_for(group.run.project),
    )


def browse_choice(
    *, group: Group, user, membership: Membership, assignment: Assignment | None, judged: bool
) -> BrowseChoice | None:
    """The choice the page offers, or None when the page shows what it always did (the
    person's role sees verdicts, their own assignment decides, or they judged or revealed it).
    A reviewer's page pays a few queries for it (policy; reveal and verdict in one; the queue check)."""
    if not hides_verdict_when_browsing(membership) or not group.to_judge or judged:
        return None
    if assignment is not None and assignment.is_open:
        return None
    policy = ReviewPolicy.objects.filter(project_id=group.run.project_id).first() or ReviewPolicy(project_id=group.run.project_id)
    if not policy.blind:  # a project that does not judge blind has nothing to hide
        return None
    seen = (
        Group.objects.filter(pk=group.pk)
        .annotate(
            revealed=Exists(Reveal.objects.filter(group=OuterRef("pk"), user=user)),
            graded=Exists(Verdict.objects.by_graders().filter(group=OuterRef("pk"))),  # a grader's word to hide
            settled=Exists(Verdict.objects.filter(group=OuterRef("pk"), settled_by=Verdict.SettledBy.IDENTICAL_PATCHES)),
        )
        .values("revealed", "graded", "settled")
        .first()
    )
    if seen is None or seen["revealed"]:
        return None
    return BrowseChoice(
        has_verdict=seen["graded"],
        settled=seen["settled"] and not seen["graded"],
        refusal=_refusal(group=group, reviewer=user, assignment=assignment, judged=judged, revealed=False, policy=policy),
    )
