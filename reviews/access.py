"""The review desk's access rules beyond the project check (grading.projects.access): a
reviewer judges only a group assigned to them, and why the queue serves a group next is
said only to those who manage the project."""

from __future__ import annotations

from django.http import Http404, HttpRequest

from grading.models import Capability, Membership
from grading.projects.access import page_group
from reviews.models import Assignment
from reviews.selectors.queue import assignment_for


def get_assignment_for_reviewer(request: HttpRequest, project: str, run: str, uid: str) -> tuple[Assignment, Membership]:
    """The person's own assignment on the group. A group not assigned to them is 404, as is
    another project's: judging happens only through the queue (or an admin's assignment)."""
    group, membership = page_group(request, project, run, uid, Capability.REVIEW)
    assignment = assignment_for(group=group, reviewer=request.user)
    if assignment is None:
        raise Http404("This group is not assigned to you")
    return assignment, membership


def sees_why_next(membership: Membership, assignment: Assignment | None = None) -> bool:
    """Why the queue serves a group next (reviews.selectors.queue.why_next) is derived from its
    graders' verdicts (how far they differ, what a verdict moves): said to those who manage
    the project, and not on a group they judge blind (`assignment`, theirs on it)."""
    return Capability.MANAGE in membership.capabilities and not (assignment is not None and assignment.is_open_blind)
