"""The Team page's services and views (grading/projects/team.py, grading/views/team.py).

People: alice admin of acme; bob reviewer in acme; carol admin of "other" only.
"""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model

from grading.models import ApiToken, Membership, Role
from grading.projects import team
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import post_lines
from tests.helpers.people import member

pytestmark = pytest.mark.django_db

TEAM = "/projects/acme/team/"


def membership(user, project):
    return Membership.objects.get(user=user, project=project)


def test_the_last_admin_can_be_neither_demoted_nor_removed(acme, alice, bob):
    with pytest.raises(team.TeamError, match="last admin"):
        team.change_role(project=acme, membership_id=membership(alice, acme).pk, role=Role.REVIEWER, actor=alice)
    with pytest.raises(team.TeamError, match="last admin"):
        team.remove_member(project=acme, membership_id=membership(alice, acme).pk, actor=alice)
    assert membership(alice, acme).role == Role.ADMIN
    team.change_role(project=acme, membership_id=membership(bob, acme).pk, role=Role.ADMIN, actor=alice)
    team.change_role(project=acme, membership_id=membership(alice, acme).pk, role=Role.REVIEWER, actor=alice)  # bob remains
    assert membership(alice, acme).role == Role.REVIEWER
    with pytest.raises(team.TeamError, match="last admin"):
        team.remove_member(project=acme, membership_id=membership(bob, acme).pk, actor=bob)


def test_add_change_and_remove_are_in_the_admin_history(acme, alice):
    get_user_model().objects.create_user(username="newbie", password="x")
    added = team.add_member(project=acme, username="newbie", role=Role.AUDITOR, actor=alice)
    with pytest.raises(team.TeamError, match="already a member"):
        team.add_member(project=acme, username="newbie", role=Role.REVIEWER, actor=alice)
    with pytest.raises(team.TeamError, match="no account is called 'ghost'"):
        team.add_member(project=acme, username="ghost", role=Role.REVIEWER, actor=alice)
    with pytest.raises(team.TeamError, match="unknown role"):
        team.add_member(project=acme, username="newbie", role="owner", actor=alice)
    team.change_role(project=acme, membership_id=added.pk, role=Role.ADJUDICATOR, actor=alice)
    assert team.remove_member(project=acme, membership_id=added.pk, actor=alice) == "newbie"
    assert not Membership.objects.filter(user__username="newbie").exists()
    log = list(LogEntry.objects.order_by("pk").values_list("user__username", "action_flag", "change_message"))
    assert log == [
        ("alice", 1, "Added to acme as auditor on the team page"),
        ("alice", 2, "Role in acme changed from auditor to adjudicator on the team page"),
        ("alice", 3, "Removed from acme on the team page"),
    ]


def test_a_revoked_token_is_refused_by_the_api(client, acme, alice):
    token, secret = team.create_token(project=acme, username="trainer-bot", role=Role.ADMIN, name="ingest", actor=alice)
    assert post_lines(client, secret, jsonl(small_group("t-1@1"))).status_code == 200
    bot = get_user_model().objects.get(username="trainer-bot")
    assert not bot.has_usable_password() and membership(bot, acme).role == Role.ADMIN
    team.revoke_token(project=acme, token_id=token.pk, actor=alice)
    r = post_lines(client, secret, jsonl(small_group("t-2@1")))
    assert r.status_code == 401 and r.json()["detail"] == "Invalid or revoked token"
    with pytest.raises(team.TeamError, match="already revoked"):
        team.revoke_token(project=acme, token_id=token.pk, actor=alice)


def test_a_token_never_changes_a_members_role(acme, alice):
    first, _ = team.create_token(project=acme, username="ci-bot", role=Role.TRAINER, name="", actor=alice)
    with pytest.raises(team.TeamError, match="ci-bot is a member as trainer"):
        team.create_token(project=acme, username="ci-bot", role=Role.ADMIN, name="", actor=alice)
    assert membership(first.user, acme).role == Role.TRAINER and ApiToken.objects.count() == 1
    token, _ = team.create_token(project=acme, username="ci-bot", role=Role.TRAINER, name="ci's export", actor=alice)
    assert token.user == first.user and token.name == "ci's export" and token.created_by == alice
    with pytest.raises(team.TeamError, match="not a usable username"):
        team.create_token(project=acme, username="no spaces", role=Role.TRAINER, name="", actor=alice)


def test_removing_a_member_revokes_their_tokens_here_only(acme, other_project, alice, bob):
    Membership.objects.create(user=bob, project=other_project, role=Role.REVIEWER)
    here, _ = ApiToken.issue(user=bob, project=acme)  # the operator's create_api_token may make one for bob
    there, _ = ApiToken.issue(user=bob, project=other_project)
    team.remove_member(project=acme, membership_id=membership(bob, acme).pk, actor=alice)
    here.refresh_from_db()
    there.refresh_from_db()
    assert here.revoked_at is not None and there.revoked_at is None


def test_another_projects_token_or_member_is_not_found(acme, other_project, alice, carol):
    carols = membership(carol, other_project)
    with pytest.raises(team.TeamError, match="no such member"):
        team.remove_member(project=acme, membership_id=carols.pk, actor=alice)
    token, _ = ApiToken.issue(user=carol, project=other_project)
    with pytest.raises(team.TeamError, match="no such token"):
        team.revoke_token(project=acme, token_id=token.pk, actor=alice)
    assert Membership.objects.filter(pk=carols.pk).exists()


# --- the page ---------------------------------------------------------------------------


def test_only_admins_open_the_team_page(client, alice, bob, carol):
    client.force_login(bob)
    r = client.get(TEAM)
    assert r.status_code == 403 and "Your role (reviewer) in acme does not allow this" in r.content.decode()
    client.force_login(carol)
    assert client.get(TEAM).status_code == 404
    client.force_login(alice)
    assert client.get(TEAM).status_code == 200


def test_the_page_lists_members_and_tokens_in_a_fixed_number_of_queries(client, acme, alice, bob, django_assert_max_num_queries):
    for n in range(5):
        member(f"person{n}", acme, Role.REVIEWER)
        team.create_token(project=acme, username=f"bot{n}", role=Role.TRAINER, name=f"t{n}", actor=alice)
    client.force_login(alice)
    with django_assert_max_num_queries(8):
        r = client.get(TEAM)
    html = r.content.decode()
    assert all(f"person{n}" in html and f"bot{n}" in html for n in range(5))


def test_the_secret_is_in_the_create_response_only(client, acme, alice):
    client.force_login(alice)
    r = client.post(f"{TEAM}tokens/", {"username": "trainer-bot", "role": "trainer", "name": "verl"})
    assert r.status_code == 201
    token = ApiToken.objects.get(user__username="trainer-bot")
    secret = r.context["secret"]
    assert ApiToken.digest_of(secret) == token.digest and secret in r.content.decode()
    assert "no-store" in r["Cache-Control"]
    assert secret not in client.get(TEAM).content.decode()
    r = client.post(f"{TEAM}tokens/", {"username": "alice", "role": "trainer", "name": ""})
    assert r.status_code == 422 and "alice is a member as admin" in r.content.decode()


def test_the_views_say_why_a_change_is_refused(client, acme, alice):
    client.force_login(alice)
    r = client.post(f"{TEAM}members/{membership(alice, acme).pk}/", {"action": "role", "role": "reviewer"}, follow=True)
    assert "Not changed: alice is the last admin of acme; make someone else admin first." in r.content.decode()
    r = client.post(f"{TEAM}members/", {"username": "ghost", "role": "reviewer"}, follow=True)
    assert "Not added: no account is called" in r.content.decode()
    r = client.post(f"{TEAM}tokens/999999/revoke/", follow=True)
    assert "Not revoked: no such token in this project." in r.content.decode()
    r = client.post(f"{TEAM}members/{membership(alice, acme).pk}/", {"action": "nothing"}, follow=True)
    assert "Not changed: choose to change the role or to remove the member." in r.content.decode()
