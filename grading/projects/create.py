"""Create a project on purpose: the `create_project` command and the staff's "new project" page.

A project is never made as a side effect of a typo (`create_api_token --project acmee` refuses
an unknown name unless `--create-project` is given). A new project gets its first admin, so
somebody can manage it from its team page.
"""

from __future__ import annotations

from django.contrib.admin.models import ADDITION, LogEntry
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from grading.models import Membership, Project, Role

_max_name = Project._meta.get_field("name").max_length
assert _max_name is not None  # a SlugField has one
MAX_NAME: int = _max_name
# Path segments of the pages that sit beside /projects/<name>/: a project of that name could not be reached.
RESERVED = frozenset({"new"})


class ProjectError(ValueError):
    """A project that cannot be created, with a sentence the person can act on."""


def existing_names(limit: int = 20) -> str:
    """The existing projects' names, for an error that says what there is ('none yet' when none)."""
    names = list(Project.objects.order_by("name").values_list("name", flat=True)[: limit + 1])
    if not names:
        return "none yet"
    return ", ".join(names[:limit]) + (" …" if len(names) > limit else "")


def check_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ProjectError("give the project a name")
    if len(name) > MAX_NAME:
        raise ProjectError(f"a project name is at most {MAX_NAME} characters")
    try:
        validate_slug(name)
    except ValidationError:
        raise ProjectError(f"project name {name!r} must be a slug (letters, digits, - and _)") from None
    if name in RESERVED:
        raise ProjectError(f"{name!r} is a reserved name; choose another")
    clash = Project.objects.filter(name__iexact=name).values_list("name", flat=True).first()
    if clash is not None:
        raise ProjectError(f"a project named {clash!r} already exists")
    return name


@transaction.atomic
def create_project(*, name: str, description: str = "", admin=None, actor=None) -> Project:
    """A new project, with `admin` (a user) as its first admin when given; logged to the admin history as `actor`."""
    name = check_name(name)
    try:
        with transaction.atomic():
            project = Project.objects.create(name=name, description=(description or "").strip())
    except IntegrityError:
        raise ProjectError(f"a project named {name!r} already exists") from None
    if admin is not None:
        Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
    if actor is not None:
        LogEntry.objects.log_actions(
            user_id=actor.pk,
            queryset=[project],
            action_flag=ADDITION,
            change_message="Created on the new project page",
            single_object=True,
        )
    return project
