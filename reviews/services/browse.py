"""A reviewer who opens a graded group outside an assignment (from the run or step pages, a
link, a search) chooses before any grader field reaches them: judge it blind (an assignment,
if the queue's rules allow) or see the grader's verdict (a Reveal: the queue never serves
them the group afterwards, and a judgment they make on it is not blind).

Who chooses: members whose role may review and nothing more (`hides_verdict_when_browsing`:
the reviewer role). Auditors, adjudicators and admins need the grader's verdict for their
work (cheat signals, disputes, calibration) and keep seeing it; each showing is still logged
as a Reveal, so the queue never serves them that group blind either.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from grading.models import Group
from grading.selectors.verdicts import shown_verdict
from reviews.models import Assignment, Reveal
from reviews.selectors.browse import claim_refusal
from reviews.selectors.lanes import shuffled_order
from reviews.selectors.queue import policy_for
from reviews.services.judgments import log_reveal


class ClaimRefused(Exception):
    """The queue's rules do not let this reviewer judge this group (blind); the message says why."""


def claim_blind(*, group: Group, reviewer) -> Assignment:
    """Hand `group` to `reviewer` as the queue would (blind under a blind policy); ClaimRefused says why not.

    The group's row is locked first, so the queue's count of its reviewers is current and a
    concurrent `next_assignment` skips it (SKIP LOCKED) until this commits."""
    with transaction.atomic():
        Group.objects.select_for_update().filter(pk=group.pk).first()
        policy = policy_for(group.run.project)
        refusal = claim_refusal(group=group, reviewer=reviewer, policy=policy)
        if refusal:
            raise ClaimRefused(refusal)
        existing = Assignment.objects.filter(group=group, reviewer=reviewer, status=Assignment.Status.OPEN).first()
        if existing is not None:
            return existing
        try:
            with transaction.atomic():
                return Assignment.objects.create(
                    group=group, reviewer=reviewer, blind=policy.blind, order=shuffled_order(group) if policy.blind else []
                )
        except IntegrityError:
            raise ClaimRefused("this group was already handed to you") from None


def show_verdict(*, group: Group, user) -> Reveal:
    """The reviewer chose to see the grader's verdict: logged, and the group leaves their queue."""
    return log_reveal(group=group, user=user, verdict=shown_verdict(group), reason=Reveal.Reason.BROWSE)
