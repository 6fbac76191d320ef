"""Users, memberships and API tokens for scripts and trainers."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from grading.models import ApiToken, Membership, Project, Role


@transaction.atomic
def issue_api_token(*, username: str, project_name: str, role: str, token_name: str = "") -> tuple[ApiToken, str]:
    """Create the user and membership if needed, then a new token; returns (token, secret).

    An existing membership keeps its role unless `role` differs, in which case the role is
    updated: the command is how admins provision scripts, and the last word should win.
    """
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(Role.values)}")
    project, _ = Project.objects.get_or_create(name=project_name)
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    membership, created = Membership.objects.get_or_create(project=project, user=user, defaults={"role": role})
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    return ApiToken.issue(user=user, project=project, name=token_name)
