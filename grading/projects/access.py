"""Who may see what. Every view and API endpoint of a project goes through here.

A user who is not a member of a project gets 404 for it (its existence is not leaked);
a member whose role lacks the capability gets 403.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from grading.models import ApiToken, Membership, Project


def membership_for(user, project: Project) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(project=project, user=user).first()


def get_project_for(user, name: str, capability: str, *, token: ApiToken | None = None) -> tuple[Project, Membership]:
    """The project named `name` if `user` holds `capability` in it; Http404 / PermissionDenied otherwise."""
    try:
        project = Project.objects.get(name=name)
    except Project.DoesNotExist:
        raise Http404("No such project") from None
    if token is not None and token.project_id != project.pk:
        raise Http404("No such project")
    membership = membership_for(user, project)
    if membership is None:
        raise Http404("No such project")
    if capability not in membership.capabilities:
        raise PermissionDenied(f"Your role ({membership.role}) in {project.name} does not allow this")
    return project, membership
