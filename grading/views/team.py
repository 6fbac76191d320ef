"""The Team page of a project (admins): members and roles, API tokens. The writes are the
services in grading/projects/team.py; these views read the form, call one, and say what happened."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_GET, require_POST

from grading.models import Capability, Role
from grading.projects import invites, team
from grading.projects.access import page_project
from grading.selectors.projects import team_members, team_tokens


def _page(
    request: HttpRequest,
    project,
    membership,
    *,
    new_token=None,
    secret: str | None = None,
    status: int = 200,
    form: dict | None = None,
    invite: dict | None = None,
) -> HttpResponse:
    context = {
        "project": project,
        "membership": membership,
        "roles": Role.choices,
        "members": team_members(project),
        "tokens": team_tokens(project),
        "new_token": new_token,
        "secret": secret,
        "form": form or {},
        "invite": invite,
    }
    return render(request, "grading/team.html", context, status=status)


@login_required
@require_GET
def team_page(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.MANAGE)
    return _page(request, project_obj, membership)


@login_required
@require_POST
def add_member(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, _ = page_project(request, project, Capability.MANAGE)
    try:
        member = team.add_member(
            project=project_obj, username=request.POST.get("username", ""), role=request.POST.get("role", ""), actor=request.user
        )
    except team.TeamError as exc:
        messages.error(request, f"Not added: {exc}.")
    else:
        messages.success(request, f"{member.user.username} is now {member.get_role_display().lower()} in {project_obj.name}.")
    return redirect("team", project=project_obj.name)


@login_required
@require_POST
def invite_member(request: HttpRequest, project: str) -> HttpResponse:
    """The sign-up link is in this response only (no redirect, no session): the admin passes it on."""
    project_obj, membership = page_project(request, project, Capability.MANAGE)
    form = {key: request.POST.get(key, "") for key in ("username", "email", "role")}
    try:
        member = team.invite_member(project=project_obj, actor=request.user, **form)
    except team.TeamError as exc:
        messages.error(request, f"Not invited: {exc}.")
        return _page(request, project_obj, membership, status=422, form={f"invite_{k}": v for k, v in form.items()})
    link = request.build_absolute_uri(invites.invite_path(member.user))
    mailed = invites.send_invite(user=member.user, project=project_obj, link=link, inviter=request.user)
    return _page(
        request,
        project_obj,
        membership,
        status=201,
        invite={"member": member, "link": link, "mailed": mailed, "email": member.user.email},
    )


@login_required
@require_POST
def change_member(request: HttpRequest, project: str, pk: int) -> HttpResponse:
    """One member's row: `action=role` with `role`, or `action=remove`."""
    project_obj, _ = page_project(request, project, Capability.MANAGE)
    action = request.POST.get("action")
    try:
        if action == "remove":
            username = team.remove_member(project=project_obj, membership_id=pk, actor=request.user)
            messages.success(request, f"{username} was removed from {project_obj.name}; their tokens for it are revoked.")
        elif action == "role":
            member = team.change_role(
                project=project_obj, membership_id=pk, role=request.POST.get("role", ""), actor=request.user
            )
            messages.success(request, f"{member.user.username} is now {member.get_role_display().lower()}.")
        else:
            raise team.TeamError("choose to change the role or to remove the member")
    except team.TeamError as exc:
        messages.error(request, f"Not changed: {exc}.")
    return redirect("team", project=project_obj.name)


@login_required
@require_POST
def create_token(request: HttpRequest, project: str) -> HttpResponse:
    """The secret is in this response only (no redirect, no session): it is shown once."""
    project_obj, membership = page_project(request, project, Capability.MANAGE)
    form = {key: request.POST.get(key, "") for key in ("username", "role", "name")}
    try:
        token, secret = team.create_token(project=project_obj, actor=request.user, **form)
    except team.TeamError as exc:
        messages.error(request, f"No token created: {exc}.")
        return _page(request, project_obj, membership, status=422, form=form)
    return _page(request, project_obj, membership, new_token=token, secret=secret, status=201)


@login_required
@require_POST
def revoke_token(request: HttpRequest, project: str, pk: int) -> HttpResponse:
    project_obj, _ = page_project(request, project, Capability.MANAGE)
    try:
        token = team.revoke_token(project=project_obj, token_id=pk, actor=request.user)
    except team.TeamError as exc:
        messages.error(request, f"Not revoked: {exc}.")
    else:
        messages.success(request, f"Token {token.prefix}… of {token.user.username} is revoked; the API refuses it from now on.")
    return redirect("team", project=project_obj.name)


class AcceptInviteView(auth_views.PasswordResetConfirmView):
    """The sign-up link (grading/projects/invites.py): choose a password, and be logged in. Django's
    password-reset confirmation: the token holds only while the password is unset, so the link works once."""

    template_name = "registration/invite.html"
    post_reset_login = True
    success_url = reverse_lazy("projects")

    def form_valid(self, form):
        response = super().form_valid(form)
        messages.success(self.request, f"Welcome, {form.user.get_username()}: your password is set and you are logged in.")
        return response
