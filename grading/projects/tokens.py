"""Users, memberships and API tokens for scripts and trainers."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from grading.models import ApiToken, Membership, Project, Role
from grading.projects.create import existing_names


class UnknownProject(ValueError):
    """No project of that name: create it first (`create_project`, or `create_api_token --create-project`)."""

    def __init__(self, name: str):
        self.name = name
        super().__init__(f"no project {name!r}; existing projects: {existing_names()}")


# How stale a token's last_used_at may get before a request writes it again: one write a
# minute at most, not one a request.
TOUCH_EVERY = timedelta(minutes=1)


def live_token_marking_use(secret: str) -> ApiToken | None:
    """The token of `secret` if it is not revoked and its user is active, else None. A read
    that also writes: the token's last_used_at, when it is older than TOUCH_EVERY."""
    token = (
        ApiToken.objects.select_related("user", "project")
        .filter(digest=ApiToken.digest_of(secret), revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > TOUCH_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


@transaction.atomic
def issue_api_token(*, username: str, project_name: str, role: str, token_name: str = "") -> tuple[ApiToken, str]:
    """Create the user and membership if needed, then a new token; returns (token, secret).

    The project must exist (UnknownProject otherwise, naming the ones that do).

    An existing membership keeps its role unless `role` differs, in which case the role is
    updated: the command is how admins provision scripts, and the last word should win.
    """
    if role not in Role.values:
        raise ValueError(f"unknown role {role!r}; choose one of {', '.join(Role.values)}")
    project = Project.objects.filter(name=project_name).first()
    if project is None:  # a typo must not send a trainer's ingest into a new, empty project
        raise UnknownProject(project_name)
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
