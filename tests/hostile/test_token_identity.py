"""Tokens made on a Team page never speak for someone else, and a project keeps an admin who
signs in (grading/projects/team.py, grading/projects/accounts.py, `check_api_tokens`).

People: alice admin of acme; bea admin of "other" only (an account of her own); root a site
superuser and admin of acme; stan site staff, reviewer in acme.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.models import ADDITION, LogEntry
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.models import ApiToken, Membership, Role, ServiceAccount
from grading.projects import team
from tests.helpers.people import member

pytestmark = pytest.mark.django_db

TEAM = "/projects/acme/team/"
STEEP = {"T1": 1, "T2": [0.6, 0.4], "T3": 0.2}


@pytest.fixture
def bea(other_project):
    return member("bea", other_project, Role.ADMIN)


@pytest.fixture
def root(acme):
    user = member("root", acme, Role.ADMIN)
    user.is_superuser = user.is_staff = True
    user.save()
    return user


@pytest.fixture
def stan(acme):
    user = member("stan", acme, Role.REVIEWER)
    user.is_staff = True
    user.save()
    return user


def test_a_token_acts_as_no_other_person_staff_or_superuser(client, acme, alice, bea, root, stan):
    # alice may not mint a token acting as bea (her own account, another project), as root
    # (a superuser, even one who is admin here) or as stan (staff): each refused, nothing added.
    client.force_login(alice)
    for who, why in (
        ("bea", "bea is an account of its own, not a service account of acme"),
        ("root", "root is site staff or a superuser"),
        ("stan", "stan is site staff or a superuser"),
    ):
        role = {"bea": "admin", "root": "admin", "stan": "reviewer"}[who]
        r = client.post(f"{TEAM}tokens/", {"username": who, "role": role, "name": "forged"})
        assert r.status_code == 422, who
        assert why in r.content.decode()
    assert not ApiToken.objects.exists()
    assert not Membership.objects.filter(project=acme, user=bea).exists()
    # ... nor can root, a superuser, make one for himself here (the operator's command can).
    with pytest.raises(team.TeamError, match="root is site staff or a superuser"):
        team.create_token(project=acme, username="root", role=Role.ADMIN, name="", actor=root)


def test_a_service_account_is_marked_and_acts_as_itself_with_its_maker(client, acme, other_project, alice, bea):
    client.force_login(alice)
    r = client.post(f"{TEAM}tokens/", {"username": "ci-bot", "role": "admin", "name": "fits"})
    assert r.status_code == 201
    token = ApiToken.objects.get(user__username="ci-bot")
    bot = token.user
    assert not bot.has_usable_password() and token.created_by == alice
    assert ServiceAccount.objects.get(user=bot).project == acme and ServiceAccount.objects.get(user=bot).created_by == alice
    assert "service account" in client.get(TEAM).content.decode()
    # What it does names the service account and the admin who made it.
    r = client.post(
        "/api/v1/mappings/",
        data=json.dumps({"name": "steep", "bands": STEEP}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {r.context['secret']}",
    )
    assert r.status_code == 201, r.content
    assert r.json()["created_by"] == "ci-bot (service account made by alice)"
    listed = client.get("/api/v1/mappings/?project=acme").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [m["created_by"] for m in rows if m["name"] == "steep"] == ["ci-bot (service account made by alice)"]
    # Another project's admin cannot then borrow acme's service account.
    with pytest.raises(team.TeamError, match="service account of another project"):
        team.add_member(project=other_project, username="ci-bot", role=Role.ADMIN, actor=bea)


def test_a_tokens_role_is_at_most_its_makers(acme, alice):
    # An auditor who somehow reached the service (it is the Team page's, admins only) may not
    # make an admin token: the role is bounded by the maker's own.
    auditor = member("audrey", acme, Role.AUDITOR)
    with pytest.raises(team.TeamError, match=r"at most its maker's \(auditor\), not admin"):
        team.create_token(project=acme, username="audrey-bot", role=Role.ADMIN, name="", actor=auditor)
    assert not get_user_model().objects.filter(username="audrey-bot").exists()
    token, _ = team.create_token(project=acme, username="alice", role=Role.ADMIN, name="mine", actor=alice)
    assert token.user == alice and token.created_by == alice


def test_the_check_lists_tokens_made_before_for_someone_else(acme, alice, bea, root):
    # Tokens as the old Team page made them: no maker recorded, only its entry in the history.
    forged, _ = ApiToken.issue(user=bea, project=acme)
    as_root, _ = ApiToken.issue(user=root, project=acme)
    own, _ = ApiToken.issue(user=alice, project=acme)
    old_bot = get_user_model().objects.create_user(username="old-bot")  # no password, acme only
    Membership.objects.create(project=acme, user=old_bot, role=Role.TRAINER)
    bots, _ = ApiToken.issue(user=old_bot, project=acme)
    for t in (forged, as_root, own, bots):
        LogEntry.objects.log_actions(
            user_id=alice.pk,
            queryset=[t],
            action_flag=ADDITION,
            change_message=f"Token {t.prefix}… created for {t.user.username} on the team page",
        )
    operators, _ = ApiToken.issue(user=bea, project=acme)  # create_api_token: no entry, the operator's tool
    with pytest.raises(CommandError, match="2 tokens act as someone other than their maker") as raised:
        call_command("check_api_tokens", stdout=(out := _Out()))
    assert raised.value.returncode == 1
    assert f"acme: token {forged.prefix}… acts as bea, a person with an account of their own; made by alice" in out.text
    assert f"acme: token {as_root.prefix}… acts as root, site staff or a superuser; made by alice" in out.text
    assert own.prefix not in out.text and bots.prefix not in out.text and operators.prefix not in out.text
    call_command("check_api_tokens", "--revoke", stdout=_Out())
    forged.refresh_from_db()
    operators.refresh_from_db()
    assert forged.revoked_at is not None and operators.revoked_at is None
    call_command("check_api_tokens", stdout=(out := _Out()))
    assert "No token acts as someone other than its maker." in out.text


class _Out:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_the_last_person_among_the_admins_stays(client, acme, alice):
    # ci-bot is admin too, but it signs in with no password: alice is the last admin who can
    # open the Team page, so she can neither demote nor remove herself.
    team.create_token(project=acme, username="ci-bot", role=Role.ADMIN, name="", actor=alice)
    mine = Membership.objects.get(project=acme, user=alice)
    with pytest.raises(team.TeamError, match="last admin of acme who signs in with a password"):
        team.change_role(project=acme, membership_id=mine.pk, role=Role.REVIEWER, actor=alice)
    with pytest.raises(team.TeamError, match="last admin of acme who signs in with a password"):
        team.remove_member(project=acme, membership_id=mine.pk, actor=alice)
    mine.refresh_from_db()
    assert mine.role == Role.ADMIN
    client.force_login(alice)
    r = client.post(f"{TEAM}members/{mine.pk}/", {"action": "role", "role": "reviewer"}, follow=True)
    assert "who signs in with a password" in r.content.decode()
    assert client.get(TEAM).status_code == 200
    # With another person as admin she may step down, and the bot may be demoted at any time.
    dana = member("dana", acme, Role.ADMIN)
    team.change_role(project=acme, membership_id=mine.pk, role=Role.REVIEWER, actor=alice)
    bot = Membership.objects.get(project=acme, user__username="ci-bot")
    team.change_role(project=acme, membership_id=bot.pk, role=Role.TRAINER, actor=dana)
