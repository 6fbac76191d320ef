"""A project's team, changed by its admins in the browser (the Team page, grading/views/team.py):
members and their roles, and API tokens. Every change is written to the audit trail the
Django admin keeps (LogEntry), next to changes made there.

A project always keeps an admin who signs in: the last one can be neither demoted nor
removed, and neither can the last person among them while the other admins are service or
token accounts (which cannot open this page), so no project is left that nobody can manage.

Tokens made here never speak for someone else: a token acts as the admin who makes it or as
a service account of this project (grading/projects/accounts.py), never as another person,
another project's account, staff or a superuser, and with a role at most its maker's. The
server operator's `create_api_token` command (grading/projects/tokens.py) is not bound by this.
"""

from __future__ import annotations

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from grading.models import ROLE_CAPABILITIES, ApiToken, Membership, Project, Role, ServiceAccount
from grading.projects.accounts import is_privileged, people_q, service_account_of

_max_token_name = ApiToken._meta.get_field("name").max_length
assert _max_token_name is not None  # a CharField has one
MAX_TOKEN_NAME: int = _max_token_name


class TeamError(ValueError):
    """A change the team page refuses, with a sentence the admin can act on."""


def _log(actor, objects, flag: int, message: str) -> None:
    if objects:
        # django-stubs overloads `single_object` as Literal[True] or Literal[False] and has none for a bool.
        LogEntry.objects.log_actions(  # type: ignore[call-overload]
            user_id=actor.pk, queryset=objects, action_flag=flag, change_message=message, single_object=len(objects) == 1
        )


def _check_role(role: str) -> str:
    if role not in Role.values:
        raise TeamError(f"unknown role {role!r}; choose one of {', '.join(Role.values)}")
    return role


def _check_an_admin_remains(project: Project, membership: Membership) -> None:
    """Refuse to take `membership` out of the admins when that leaves no admin, or no person among them."""
    if membership.role != Role.ADMIN:
        return
    others = Membership.objects.filter(project=project, role=Role.ADMIN).exclude(pk=membership.pk)
    name = membership.user.username
    if not others.exists():
        raise TeamError(f"{name} is the last admin of {project.name}; make someone else admin first")
    user_model = get_user_model()
    if user_model.objects.filter(people_q(), pk=membership.user_id).exists() and not others.filter(people_q("user__")).exists():
        raise TeamError(
            f"{name} is the last admin of {project.name} who signs in with a password; the other admins "
            "are service or token accounts, which cannot open this page: make a person admin first"
        )


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
    account = service_account_of(user)
    if account is not None and account.project_id != project.pk:
        raise TeamError(f"{username} is a service account of another project; it acts there only")
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
    max_username = user_model._meta.get_field("username").max_length
    assert max_username is not None  # the username is a CharField
    if len(username) > max_username:
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
    if role != Role.ADMIN:
        _check_an_admin_remains(project, membership)
    before = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    _log(actor, [membership], CHANGE, f"Role in {project.name} changed from {before} to {role} on the team page")
    return membership


@transaction.atomic
def remove_member(*, project: Project, membership_id: int, actor) -> str:
    """Remove a member; their API tokens for this project are revoked with them. Their username."""
    membership = _locked_membership(project, membership_id)
    _check_an_admin_remains(project, membership)
    username = membership.user.username
    _revoke(
        project=project,
        tokens=ApiToken.objects.filter(project=project, user_id=membership.user_id),
        actor=actor,
        message=f"Revoked: {username} was removed from {project.name}",
    )
    _log(actor, [membership], DELETION, f"Removed from {project.name} on the team page")
    membership.delete()
    return username


@transaction.atomic
def create_token(*, project: Project, username: str, role: str, name: str, actor) -> tuple[ApiToken, str]:
    """A new token acting as `actor` themself or as a service account of `project`; (token, secret),
    the secret shown once.

    A name no account has makes a service account of this project (no password: it acts only
    through tokens) with `role`, marked with `actor` as its maker. An existing account must be
    `actor` or a service account of this project, and a token for it asks for the role it has
    (change it in the member list first), so issuing a token never changes what anyone may do.
    Refused: another person, another project's account, staff or a superuser (a token would
    write under their name), and a role beyond the maker's own.
    """
    _check_role(role)
    username, name = (username or "").strip(), (name or "").strip()
    if not username:
        raise TeamError(
            "give the account the token acts as: your own username, a service account of this project, "
            "or a new name (which makes a service account)"
        )
    if len(name) > MAX_TOKEN_NAME:
        raise TeamError(f"the token's name is longer than {MAX_TOKEN_NAME} characters")
    user_model = get_user_model()
    user_field = user_model._meta.get_field("username")
    try:
        user_field.run_validators(username)
    except Exception as exc:  # noqa: BLE001  django.core.exceptions.ValidationError: its messages, as one sentence
        raise TeamError(f"{username!r} is not a usable username: {' '.join(getattr(exc, 'messages', [str(exc)]))}") from None
    max_username = user_field.max_length
    assert max_username is not None  # the username is a CharField
    if len(username) > max_username:
        raise TeamError(f"a username has at most {max_username} characters")
    maker = Membership.objects.filter(project=project, user_id=actor.pk).first()
    if maker is None or not ROLE_CAPABILITIES[role] <= maker.capabilities:
        raise TeamError(f"a token's role is at most its maker's ({maker.role if maker else 'none'}), not {role}")
    user = user_model.objects.filter(username=username).select_related("service_account").first()
    if user is None:
        user = user_model(username=username)
        user.set_unusable_password()
        user.save()
        ServiceAccount.objects.create(user=user, project=project, created_by=actor)
        membership = Membership.objects.create(project=project, user=user, role=role)
        _log(
            actor,
            [membership],
            ADDITION,
            f"Added to {project.name} as {role}: a service account with a new API token, on the team page",
        )
    else:
        membership = _token_membership(project=project, user=user, role=role, actor=actor)
    token, secret = ApiToken.issue(user=user, project=project, name=name, created_by=actor)
    _log(actor, [token], ADDITION, f"Token {token.prefix}… created for {username} ({role}) on the team page")
    return token, secret


def _token_membership(*, project: Project, user, role: str, actor) -> Membership:
    """The membership a token for the existing account `user` acts with; TeamError when it may not have one."""
    username = user.username
    if is_privileged(user):
        raise TeamError(
            f"{username} is site staff or a superuser; no token made here acts as one "
            "(the server's operator makes those with manage.py create_api_token)"
        )
    account = service_account_of(user)
    if user.pk != actor.pk and (account is None or account.project_id != project.pk):
        raise TeamError(
            f"{username} is an account of its own, not a service account of {project.name}; a token acts "
            "as you or as a service account of this project (a new name makes one)"
        )
    membership = Membership.objects.filter(project=project, user=user).first()
    if membership is None:
        raise TeamError(f"{username} is no longer a member of {project.name}; add it again first")
    if membership.role != role:
        raise TeamError(
            f"{username} is a member as {membership.role}; a token for them acts as {membership.role} "
            f"(change their role in the member list first, or use another account)"
        )
    return membership


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
    _revoke(
        project=project,
        tokens=ApiToken.objects.filter(pk=token.pk),
        actor=actor,
        message=f"Token {token.prefix}… revoked on the team page",
    )
    token.refresh_from_db(fields=["revoked_at"])
    return token
