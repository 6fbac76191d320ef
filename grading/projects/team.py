"""A project's team, changed by its admins in the browser (the Team page, grading/views/team.py):
members and their roles, and API tokens. Every change is written to the audit trail the
Django admin keeps (LogEntry), next to changes made there.

A project always keeps an admin: the last one can be neither demoted nor removed, so no
project is left that nobody can manage. Tokens are issued through the same service as the
`create_api_token` command (grading/projects/tokens.py); a token acts with its account's
role in the project.
"""

from __future__ import annotations

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from grading.models import ApiToken, Membership, Project, Role
from grading.projects.tokens import issue_api_token

MAX_TOKEN_NAME = ApiToken._meta.get_field("name").max_length


class TeamError(ValueError):
    """A change the team page refuses, with a sentence the admin can act on."""


def _log(actor, objects, flag: int, message: str) -> None:
    if objects:
        LogEntry.objects.log_actions(user_id=actor.pk, queryset=objects, action_flag=flag, change_message=message,
                                     single_object=len(objects) == 1)


def _check_role(role: str) -> str:
    if role not in Role.values:
        raise TeamError(f"unknown role {role!r}; choose one of {', '.join(Role.values)}")
    return role


def _other_admins(project: Project, membership: Membership) -> bool:
    return Membership.objects.filter(project=project, role=Role.ADMIN).exclude(pk=membership.pk).exists()


def _locked_membership(project: Project, pk: int) -> Membership:
    # The admins' rows are locked (PostgreSQL) so two admins demoting each other at once
    # cannot both see "another admin remains"; SQLite's immediate transactions serialize anyway.
    list(Membership.objects.select_for_update().filter(project=project, role=Role.ADMIN).values_list("pk", flat=True))
    try:
        return Membership.objects.select_for_update().select_related("user").get(project=project, pk=pk)
    except Membership.DoesNotExist:
        raise TeamError("no such member of this project (removed meanwhile?)") from None


@transaction.atomic
def add_member(*, project: Project, username: str, role: str, actor) -> Membership:
    """Give an existing account `role` in `project`."""
    _check_role(role)
    username = (username or "").strip()
    if not username:
        raise TeamError("give the username of the person to add")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise TeamError(f"no account is called {username!r}; a site admin creates accounts in the Django admin")
    if Membership.objects.filter(project=project, user=user).exists():
        raise TeamError(f"{username} is already a member of {project.name}; change their role in the list instead")
    membership = Membership.objects.create(project=project, user=user, role=role)
    _log(actor, [membership], ADDITION, f"Added to {project.name} as {role} on the team page")
    return membership


@transaction.atomic
def invite_member(*, project: Project, username: str, email: str, role: str, actor) -> Membership:
    """A new account for a person who has none yet, with `role` in `project`; no usable password until
    they open their sign-up link (grading/projects/invites.py)."""
    _check_role(role)
    username, email = (username or "").strip(), (email or "").strip()
    user_model = get_user_model()
    if not username:
        raise TeamError("give the new account a username")
    try:
        user_model.username_validator(username)
    except ValidationError:
        raise TeamError(f"{username!r} is not a usable username (letters, digits and @ . + - _)") from None
    if len(username) > user_model._meta.get_field("username").max_length:
        raise TeamError("a username is at most 150 characters")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise TeamError(f"{email!r} is not an e-mail address") from None
    if user_model.objects.filter(username=username).exists():
        raise TeamError(f"an account called {username!r} exists already; add it as a member instead")
    user = user_model(username=username, email=email)
    user.set_unusable_password()
    user.save()
    membership = Membership.objects.create(project=project, user=user, role=role)
    _log(actor, [membership], ADDITION, f"Invited to {project.name} as {role} on the team page")
    return membership


@transaction.atomic
def change_role(*, project: Project, membership_id: int, role: str, actor) -> Membership:
    _check_role(role)
    membership = _locked_membership(project, membership_id)
    if membership.role == role:
        return membership
    if membership.role == Role.ADMIN and not _other_admins(project, membership):
        raise TeamError(f"{membership.user.username} is the last admin of {project.name}; make someone else admin first")
    before = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    _log(actor, [membership], CHANGE, f"Role in {project.name} changed from {before} to {role} on the team page")
    return membership


@transaction.atomic
def remove_member(*, project: Project, membership_id: int, actor) -> str:
    """Remove a member; their API tokens for this project are revoked with them. Their username."""
    membership = _locked_membership(project, membership_id)
    if membership.role == Role.ADMIN and not _other_admins(project, membership):
        raise TeamError(f"{membership.user.username} is the last admin of {project.name}; make someone else admin first")
    username = membership.user.username
    _revoke(project=project, tokens=ApiToken.objects.filter(project=project, user_id=membership.user_id), actor=actor,
            message=f"Revoked: {username} was removed from {project.name}")
    _log(actor, [membership], DELETION, f"Removed from {project.name} on the team page")
    membership.delete()
    return username


@transaction.atomic
def create_token(*, project: Project, username: str, role: str, name: str, actor) -> tuple[ApiToken, str]:
    """A new token acting as `username` with `role`; returns (token, secret), the secret shown once.

    An account that does not exist yet is created as an API account (no password: it can only
    use tokens) and given `role`. An existing member keeps their role: a token for them must
    ask for the role they have (change it in the member list first), so issuing a token never
    changes what a person may do. An existing account that is not a member is added with `role`.
    """
    _check_role(role)
    username, name = (username or "").strip(), (name or "").strip()
    if not username:
        raise TeamError("give the account the token acts as (a new name creates an API account)")
    if len(name) > MAX_TOKEN_NAME:
        raise TeamError(f"the token's name is longer than {MAX_TOKEN_NAME} characters")
    user_field = get_user_model()._meta.get_field("username")
    try:
        user_field.run_validators(username)
    except Exception as exc:  # django.core.exceptions.ValidationError: its messages, as one sentence
        raise TeamError(f"{username!r} is not a usable username: {' '.join(getattr(exc, 'messages', [str(exc)]))}") from None
    if len(username) > user_field.max_length:
        raise TeamError(f"a username has at most {user_field.max_length} characters")
    existing = Membership.objects.filter(project=project, user__username=username).first()
    if existing is not None and existing.role != role:
        raise TeamError(f"{username} is a member as {existing.role}; a token for them acts as {existing.role} "
                        f"(change their role in the member list first, or use another account)")
    new_member = existing is None
    token, secret = issue_api_token(username=username, project_name=project.name, role=role, token_name=name)
    if new_member:
        _log(actor, [Membership.objects.get(project=project, user=token.user)], ADDITION,
             f"Added to {project.name} as {role} with a new API token on the team page")
    _log(actor, [token], ADDITION, f"Token {token.prefix}… created for {username} ({role}) on the team page")
    return token, secret


def _revoke(*, project: Project, tokens, actor, message: str) -> int:
    live = list(tokens.filter(project=project, revoked_at__isnull=True))
    if live:
        ApiToken.objects.filter(pk__in=[t.pk for t in live]).update(revoked_at=timezone.now())
        _log(actor, live, CHANGE, message)
    return len(live)


@transaction.atomic
def revoke_token(*, project: Project, token_id: int, actor) -> ApiToken:
    token = ApiToken.objects.filter(project=project, pk=token_id).select_related("user").first()
    if token is None:
        raise TeamError("no such token in this project")
    if token.revoked_at is not None:
        raise TeamError(f"token {token.prefix}… was already revoked")
    _revoke(project=project, tokens=ApiToken.objects.filter(pk=token.pk), actor=actor,
            message=f"Token {token.prefix}… revoked on the team page")
    token.refresh_from_db(fields=["revoked_at"])
    return token
