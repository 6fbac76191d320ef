"""Inviting a person who has no account yet (grading/projects/team.py invite_member, grading/projects/invites.py,
the team page's invite form and the sign-up link's set-password page).

People: alice admin of acme; bob reviewer in acme; carol admin of "other" only; nina has no account
until alice invites her.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.core import mail

from grading.models import Membership, Role

pytestmark = pytest.mark.django_db

TEAM = "/projects/acme/team/"
INVITE = "/projects/acme/team/invites/"


def invite(client, **fields):
    return client.post(INVITE, {"username": "nina", "email": "", "role": "reviewer", **fields})


def link_of(response) -> str:
    return re.search(r'data-testid="invite-link">([^<]+)<', response.content.decode()).group(1)


def test_alice_invites_nina_who_sets_a_password_once_and_is_in(client, alice, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    client.force_login(alice)
    r = invite(client, email="nina@example.org", role="auditor")
    assert r.status_code == 201
    link = link_of(r)
    assert link.startswith("http://testserver/accounts/invite/")
    assert (
        "Sign-up link for nina (auditor)" in r.content.decode()
        and 'data-testid="invite-mailed">nina@example.org<' in r.content.decode()
    )
    nina = get_user_model().objects.get(username="nina")
    assert not nina.has_usable_password() and nina.email == "nina@example.org"
    assert Membership.objects.get(user=nina).role == Role.AUDITOR
    assert LogEntry.objects.filter(change_message="Invited to acme as auditor on the team page").count() == 1
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["nina@example.org"] and link in mail.outbox[0].body
    assert "acme" in mail.outbox[0].subject
    assert link not in client.get(TEAM).content.decode()  # shown once, in the answer to the invite only

    client.logout()
    page = client.get(link, follow=True)  # Django moves the token into the session, then asks for the password
    assert page.status_code == 200 and 'data-testid="invite-username">nina<' in page.content.decode()
    set_password_url = page.redirect_chain[-1][0]
    short = client.post(set_password_url, {"new_password1": "short", "new_password2": "short"})
    assert short.status_code == 200 and "This password is too short" in short.content.decode()
    done = client.post(set_password_url, {"new_password1": "nina-pass-123", "new_password2": "nina-pass-123"}, follow=True)
    assert done.redirect_chain[-1][0] == "/projects/" and "Welcome, nina" in done.content.decode()
    assert 'href="/projects/acme/"' in done.content.decode()  # logged in, and a member of acme
    nina.refresh_from_db()
    assert nina.check_password("nina-pass-123")

    client.logout()
    again = client.get(link, follow=True)
    assert 'data-testid="invite-invalid"' in again.content.decode()  # one time only
    assert client.login(username="nina", password="nina-pass-123")


def test_without_an_address_the_link_is_only_shown(client, alice, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    client.force_login(alice)
    r = invite(client)
    assert r.status_code == 201 and link_of(r) and 'data-testid="invite-mailed"' not in r.content.decode()
    assert mail.outbox == []


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"username": "bob"}, "an account called &#x27;bob&#x27; exists already; add it as a member instead"),
        ({"username": ""}, "give the new account a username"),
        ({"username": "ni na"}, "is not a usable username"),
        ({"email": "not-an-address"}, "is not an e-mail address"),
        ({"role": "wizard"}, "unknown role"),
    ],
)
def test_refusals_say_why_and_keep_what_was_typed(client, alice, bob, fields, says):
    client.force_login(alice)
    r = invite(client, **fields)
    body = r.content.decode()
    assert r.status_code == 422 and says in body and 'data-testid="invite-link"' not in body
    assert get_user_model().objects.filter(username="nina").exists() is False
    if fields.get("email"):
        assert 'value="not-an-address"' in body


def test_only_the_projects_admins_invite(client, alice, bob, carol):
    assert invite(client).status_code == 302  # anonymous: to the login page
    client.force_login(bob)  # bob is a reviewer in acme
    assert invite(client).status_code == 403
    client.force_login(carol)  # carol is in another project only
    assert invite(client).status_code == 404
    client.force_login(alice)
    assert client.get(INVITE).status_code == 405
    assert not get_user_model().objects.filter(username="nina").exists()


def test_a_made_up_link_is_refused(client, alice):
    r = client.get("/accounts/invite/MQ/abc-123/")
    assert r.status_code == 200 and 'data-testid="invite-invalid"' in r.content.decode()
