"""A person: `member(username, project, role)`."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from grading.models import Membership


def member(username: str, project, role: str):
    """A user with a password of `<username>-pass-123` and `role` in `project`."""
    user = get_user_model().objects.create_user(username=username, password=f"{username}-pass-123")
    Membership.objects.create(user=user, project=project, role=role)
    return user
