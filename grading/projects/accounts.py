"""Who an account is: a person, or a service account a project admin made for scripts.

One definition, used by the Team page's services (grading/projects/team.py), by the check of
existing tokens (`forged_tokens`, run by `manage.py check_api_tokens`) and wherever an action is named in the audit
trail (a mapping's `created_by`, an activation's `activated_by`).

A person signs in with a password; a service account (grading.models.ServiceAccount) has
none and acts only through its project's tokens, so what it does is named with the admin
who made it: ``acting_name(bot) == "bot (service account made by alice)"``. An account with
no usable password that is not marked (the operator's `create_api_token` accounts, or a person
who has not opened their sign-up link yet) is no person who can open the Team page either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth.hashers import UNUSABLE_PASSWORD_PREFIX
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.db.models import Q

from grading.models import ApiToken, Membership, ServiceAccount


def service_account_of(user) -> ServiceAccount | None:
    try:
        return user.service_account
    except ServiceAccount.DoesNotExist:
        return None


def acting_name(user) -> str | None:
    """The username, and for a service account the admin who made it; None for no user."""
    if user is None:
        return None
    account = service_account_of(user)
    if account is None:
        return user.username
    maker = account.created_by.username if account.created_by else "an admin since removed"
    return f"{user.username} (service account made by {maker})"


def is_privileged(user) -> bool:
    """Staff and superusers: the Team page never makes a token acting as one."""
    return bool(user.is_staff or user.is_superuser)


def people_q(prefix: str = "") -> Q:
    """Accounts a person signs in with: active, a usable password, not a service account."""
    return (
        Q(**{f"{prefix}is_active": True, f"{prefix}service_account__isnull": True})
        & ~Q(**{f"{prefix}password__startswith": UNUSABLE_PASSWORD_PREFIX})
        & ~Q(**{f"{prefix}password": ""})
    )


@dataclass(frozen=True)
class ForgedToken:
    token: ApiToken
    maker: User  # the user who made it on the Team page
    why: str


def forged_tokens() -> list[ForgedToken]:
    """Live tokens made on a Team page that act as someone other than their maker and not as a
    service account of their project: another person, staff, a superuser, another project's account.

    Tokens made before their maker was recorded are traced through the Team page's entry in the
    admin history ("Token … created for … on the team page"). Tokens from the operator's
    `create_api_token` have no maker and are never listed. An account with no password that is a
    member of the token's project only is the API account the Team page made before service
    accounts were marked, and counts as that project's own.
    """
    tokens = list(
        ApiToken.objects.filter(revoked_at__isnull=True)
        .select_related("user__service_account", "project", "created_by")
        .order_by("project__name", "pk")
    )
    # LogEntry.user is a foreign key to the user model, which django-stubs leaves unparametrized.
    logged = {
        int(e.object_id): cast(User, e.user)
        for e in LogEntry.objects.filter(
            content_type=ContentType.objects.get_for_model(ApiToken),
            action_flag=ADDITION,
            change_message__endswith="on the team page",
            object_id__in=[str(t.pk) for t in tokens],
        ).select_related("user")
    }
    projects_of: dict[int, set[int]] = {}
    for user_id, project_id in Membership.objects.filter(user_id__in={t.user_id for t in tokens}).values_list(
        "user_id", "project_id"
    ):
        projects_of.setdefault(user_id, set()).add(project_id)
    found = []
    for token in tokens:
        maker, user = token.created_by or logged.get(token.pk), token.user
        if maker is None:
            continue
        if is_privileged(user):
            found.append(ForgedToken(token, maker, "site staff or a superuser"))
            continue
        if user.pk == maker.pk:
            continue
        account = service_account_of(user)
        if account is not None:
            if account.project_id != token.project_id:
                found.append(ForgedToken(token, maker, "a service account of another project"))
        elif user.has_usable_password():
            found.append(ForgedToken(token, maker, "a person with an account of their own"))
        elif projects_of.get(user.pk, set()) - {token.project_id}:
            found.append(ForgedToken(token, maker, "an account of other projects too"))
    return found
