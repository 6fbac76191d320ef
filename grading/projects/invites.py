"""Invite a person who has no account yet: a one-time sign-up link, on Django's password-reset machinery.

`invite_member` (grading/projects/team.py) creates the account without a usable password and
its membership; `invite_path` is the link: the account's id and a `default_token_generator`
token, which holds only while the password is unset and for PASSWORD_RESET_TIMEOUT seconds,
so it works once. The person opens it, chooses a password (gagar_web/urls.py: the set-password
view) and is logged in. The admin is shown the link to pass on; `send_invite` also mails it
when the account has an address (SMTP where EMAIL_HOST is set, the console otherwise).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from grading.models import Project


def invite_path(user) -> str:
    return reverse("invite", args=[urlsafe_base64_encode(force_bytes(user.pk)), default_token_generator.make_token(user)])


def send_invite(*, user, project: Project, link: str, inviter) -> bool:
    """Mail `link` to the invited account's address; False when it has none (the admin passes the link on)."""
    if not user.email:
        return False
    days = max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)
    send_mail(
        subject=f"You are invited to {project.name} on the Gagar review desk",
        message=(
            f"{inviter.get_username()} added you to the project {project.name} as {user.get_username()}.\n\n"
            f"Choose your password here (the link works once, for {days} day{'s' if days != 1 else ''}):\n{link}\n"
        ),
        from_email=None,
        recipient_list=[user.email],
    )
    return True
