"""Object-level access for the review desk: every view of a group goes through here."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from grading import selectors
from grading.models import Group, Membership, Project, Run
from grading.projects.access import get_project_for
from reviews.models import Assignment


def get_group_for(request: HttpRequest, project: str, run: str, uid: str, capability: str) -> tuple[Group, Membership]:
    project_obj, membership = get_project_for(request.user, project, capability)
    run_obj = get_object_or_404(Run, project=project_obj, name=run)
    return selectors.group_for_page(run_obj, uid), membership


def get_assignment_for_reviewer(request: HttpRequest, project: str, run: str, uid: str) -> tuple[Assignment, Membership]:
    """The person's own assignment on the group. A group not assigned to them is 404, as is
    another project's: judging happens only through the queue (or an admin's assignment)."""
    group, membership = get_group_for(request, project, run, uid, "review")
    assignment = Assignment.objects.filter(group=group, reviewer=request.user).select_related("group__run__project").first()
    if assignment is None:
        raise Http404("This group is not assigned to you")
    assignment.group = group  # the page's select_related copy
    return assignment, membership


def get_project(request: HttpRequest, project: str, capability: str) -> tuple[Project, Membership]:
    return get_project_for(request.user, project, capability)
