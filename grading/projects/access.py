"""Who may see what. Every view and API endpoint of a project goes through here.

`get_project_for` is the one check: a user who is not a member of a project gets 404 for
it (its existence is not leaked), as does an API token used on another project than its
own; a member whose role lacks the capability gets 403. The rest are thin wrappers for
pages (`page_project`, `page_run`, `page_group`: a request, Django's 404/403 pages); the
API's wrapper, which answers in JSON, is `grading.api.scoping.project_for_request`.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from grading.models import ApiToken, Capability, Group, Membership, Project, Run
from grading.selectors.groups import group_for_page


def membership_for(user, project: Project) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(project=project, user=user).first()


def get_project_for(user, name: str, *capabilities: Capability, token: ApiToken | None = None) -> tuple[Project, Membership]:
    """The project named `name` if `user` holds one of `capabilities` in it; Http404 / PermissionDenied otherwise."""
    if not capabilities:
        raise TypeError("get_project_for needs at least one capability")
    try:
        project = Project.objects.get(name=name)
    except Project.DoesNotExist:
        raise Http404("No such project") from None
    if token is not None and token.project_id != project.pk:
        raise Http404("No such project")
    membership = membership_for(user, project)
    if membership is None:
        raise Http404("No such project")
    if not any(capability in membership.capabilities for capability in capabilities):
        raise PermissionDenied(f"Your role ({membership.role}) in {project.name} does not allow this")
    return project, membership


def require_staff(user) -> None:
    """Creating projects is the site's staff's (Django's `is_staff`), not any project's role: PermissionDenied otherwise."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        raise PermissionDenied("Only the site's staff create projects; ask one of them, or use manage.py create_project")


# --- pages: a request with a session login ------------------------------------------------


def page_project(request: HttpRequest, project: str, capability: Capability) -> tuple[Project, Membership]:
    return get_project_for(request.user, project, capability)


def page_run(request: HttpRequest, project: str, run: str, capability: Capability) -> tuple[Project, Membership, Run]:
    project_obj, membership = get_project_for(request.user, project, capability)
    return project_obj, membership, get_object_or_404(Run, project=project_obj, name=run)


def page_group(request: HttpRequest, project: str, run: str, uid: str, capability: Capability) -> tuple[Group, Membership]:
    _, membership, run_obj = page_run(request, project, run, capability)
    return group_for_page(run_obj, uid), membership
