"""Which project an API request is about: `?project=` with a session login, or the token's own.

The API's thin wrapper around the one access check, grading.projects.access.get_project_for:
a missing project name is a 400 response; Http404 and PermissionDenied become JSON 404/403
in grading.api.errors.exception_handler.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework import status
from rest_framework.response import Response

from grading.api.errors import error
from grading.formats import params
from grading.formats.groupline import MAX_INT, MAX_NAME
from grading.models import ApiToken, Project, Run
from grading.projects.access import get_project_for


def request_token(request) -> ApiToken | None:
    """The API token the request authenticated with, if any (None for a session login)."""
    return request.auth if isinstance(request.auth, ApiToken) else None


def project_for_request(request, *capabilities: str, token_default: bool = True) -> tuple[Project | None, Response | None]:
    """The project of `?project=` (or, with `token_default`, the token's), if the user holds any of `capabilities` there.

    Returns (project, None), or (None, a 400 response) when no project is named; raises
    Http404 for a project the user is not in (or not the token's) and PermissionDenied
    when no capability fits.
    """
    project, _membership, problem = membership_for_request(request, *capabilities, token_default=token_default)
    return project, problem


def membership_for_request(request, *capabilities: str, token_default: bool = True):
    """As `project_for_request`, with the caller's membership: (project, membership, None) or (None, None, a 400)."""
    token = request_token(request)
    name = request.query_params.get("project") or (token.project.name if token and token_default else "")
    if not name:
        return None, None, error(status.HTTP_400_BAD_REQUEST, "query parameter 'project' is required")
    if not params.usable_name(name):  # a NUL would reach PostgreSQL, which refuses it in text (a 500)
        raise Http404("No such project")
    project, membership = get_project_for(request.user, name, *capabilities, token=token)
    return project, membership, None


def run_for_request(request, project: Project, *, required: bool = True) -> tuple[Run | None, Response | None]:
    """The run of `?run=` in `project`: (run, None); (None, a 400) when it is required and
    missing; (None, a 404) when no such run; (None, None) when optional and not given."""
    name = request.query_params.get("run", "")
    if not name:
        return None, error(status.HTTP_400_BAD_REQUEST, "query parameter 'run' is required") if required else None
    run = run_named(project, name)
    if run is None:
        return None, error(status.HTTP_404_NOT_FOUND, f"no run {name[:MAX_NAME]!r} in {project.name}")
    return run, None


def run_named(project: Project, name: str) -> Run | None:
    """The project's run of that name; None also for a name no run can have (a NUL, which
    PostgreSQL refuses in text, or longer than a run name may be)."""
    if not params.usable_name(name, max_len=MAX_NAME):
        return None
    return Run.objects.filter(project=project, name=name).first()


def step_of(run: Run, number: int):
    """The run's step of that number; None also for a number past the 32-bit column."""
    return run.steps.filter(number=number).first() if 0 <= number <= MAX_INT else None
