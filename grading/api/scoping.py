"""Which project an API request is about: `?project=` with a session login, or the token's own.

The API's thin wrapper around the one access check, grading.projects.access.get_project_for.
Every refusal raises, and grading.api.errors.exception_handler answers it in JSON: a missing
query parameter is a ValidationError (400), a run or step that is not there NotFound (404),
Http404 and PermissionDenied from the access check a 404/403, each as {"detail": ...}.
"""

from __future__ import annotations

from typing import Literal, overload

from django.http import Http404
from rest_framework.exceptions import NotFound, ValidationError

from grading.formats import params
from grading.formats.groupline import MAX_NAME
from grading.models import ApiToken, Capability, Membership, Project, Run, Step
from grading.projects.access import get_project_for
from grading.selectors.runs import run_named
from grading.selectors.steps import step_numbered


def request_token(request) -> ApiToken | None:
    """The API token the request authenticated with, if any (None for a session login)."""
    return request.auth if isinstance(request.auth, ApiToken) else None


def required_parameter(name: str) -> ValidationError:
    """The 400 for a missing query parameter: {"detail": "query parameter 'run' is required"}."""
    return ValidationError({"detail": f"query parameter {name!r} is required"})


def project_for_request(request, *capabilities: Capability, token_default: bool = True) -> Project:
    """The project of `?project=` (or, with `token_default`, the token's), if the user holds any of `capabilities` there.

    Raises ValidationError (a 400) when no project is named, Http404 for a project the user
    is not in (or not the token's) and PermissionDenied when no capability fits.
    """
    project, _membership = membership_for_request(request, *capabilities, token_default=token_default)
    return project


def membership_for_request(request, *capabilities: Capability, token_default: bool = True) -> tuple[Project, Membership]:
    """As `project_for_request`, with the caller's membership: (project, membership)."""
    token = request_token(request)
    name = request.query_params.get("project") or (token.project.name if token and token_default else "")
    if not name:
        raise required_parameter("project")
    if not params.usable_name(name):  # a NUL would reach PostgreSQL, which refuses it in text (a 500)
        raise Http404("No such project")
    return get_project_for(request.user, name, *capabilities, token=token)


@overload
def run_for_request(request, project: Project, *, required: Literal[True] = True) -> Run: ...
@overload
def run_for_request(request, project: Project, *, required: bool) -> Run | None: ...
def run_for_request(request, project: Project, *, required: bool = True) -> Run | None:
    """The run of `?run=` in `project`; None when it is optional and not given. Raises
    ValidationError (a 400) when it is required and missing, NotFound when no such run."""
    name = request.query_params.get("run", "")
    if not name:
        if required:
            raise required_parameter("run")
        return None
    return run_or_404(project, name)


def run_or_404(project: Project, name: str) -> Run:
    """The project's run of that name; NotFound when there is none (or none can have that name)."""
    run = run_named(project, name)
    if run is None:
        raise NotFound(f"no run {name[:MAX_NAME]!r} in {project.name}")
    return run


def step_or_404(run: Run, number: int) -> Step:
    """The run's step of that number; NotFound when there is none."""
    step = step_numbered(run, number)
    if step is None:
        raise NotFound(f"run {run.name!r} has no step {number}")
    return step
