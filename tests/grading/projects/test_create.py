"""Projects made on purpose (grading/projects/create.py): `create_project`, `create_api_token`'s refusal of an
unknown project, and the staff's new-project page.

People: alice admin of acme; sid is site staff with no project; bob reviewer in acme (not staff).
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from grading.models import ApiToken, Membership, Project, Role

pytestmark = pytest.mark.django_db

NEW = "/projects/new/"


@pytest.fixture
def sid(db):
    return get_user_model().objects.create_user(username="sid", password="sid-pass-123", is_staff=True)


def command(*args) -> str:
    out = StringIO()
    call_command(*map(str, args), stdout=out, stderr=StringIO())
    return out.getvalue()


def test_create_api_token_refuses_a_typo_naming_the_projects_there_are(acme, other_project):
    with pytest.raises(CommandError) as refused:
        command("create_api_token", "probe", "--project", "acmee", "--role", "admin")
    assert str(refused.value) == (
        "no project 'acmee'; existing projects: acme, other (create it with create_project, or pass --create-project)"
    )
    assert not Project.objects.filter(name="acmee").exists() and not get_user_model().objects.filter(username="probe").exists()
    secret = command("create_api_token", "probe", "--project", "acmee", "--role", "admin", "--create-project").strip()
    token = ApiToken.objects.get(user__username="probe")
    assert secret.startswith("gagar_") and token.project.name == "acmee"
    assert Membership.objects.get(user__username="probe").role == Role.ADMIN


def test_create_api_token_says_when_there_is_no_project_at_all(db):
    with pytest.raises(CommandError, match="no project 'acme'; existing projects: none yet"):
        command("create_api_token", "probe", "--project", "acme", "--role", "trainer")


def test_create_project_command(alice, acme):
    assert command("create_project", "flash-code-rl", "--admin", "alice", "--description", "GRPO on SWE-Gym") == (
        "project flash-code-rl created, alice is its admin\n"
    )
    project = Project.objects.get(name="flash-code-rl")
    assert project.description == "GRPO on SWE-Gym" and Membership.objects.get(project=project).user == alice
    assert "give it an admin" in command("create_project", "bare")
    for name, says in (
        ("flash-code-rl", "a project named 'flash-code-rl' already exists"),
        ("ACME", "a project named 'acme' already exists"),
        ("no spaces", "must be a slug"),
        ("new", "reserved name"),
    ):
        with pytest.raises(CommandError, match=says):
            command("create_project", name)
    with pytest.raises(CommandError, match="no account is called 'ghost'"):
        command("create_project", "haunted", "--admin", "ghost")
    assert not Project.objects.filter(name__in=["haunted", "new", "no spaces"]).exists()


def test_staff_create_a_project_and_land_on_its_team_page(client, sid):
    client.force_login(sid)
    assert 'data-testid="new-project-link"' in client.get("/projects/").content.decode()
    assert 'data-testid="new-project-form"' in client.get(NEW).content.decode()
    r = client.post(NEW, {"name": "flash-code-rl", "description": "GRPO runs"}, follow=True)
    assert r.redirect_chain[-1][0] == "/projects/flash-code-rl/team/"
    body = r.content.decode()
    assert "Project flash-code-rl created; you are its admin" in body and 'data-testid="member-sid"' in body
    project = Project.objects.get(name="flash-code-rl")
    assert project.description == "GRPO runs" and Membership.objects.get(project=project, user=sid).role == Role.ADMIN
    assert LogEntry.objects.filter(object_repr="flash-code-rl", change_message="Created on the new project page").exists()


def test_a_refused_name_is_said_on_the_page_and_kept(client, sid, acme):
    client.force_login(sid)
    r = client.post(NEW, {"name": "acme", "description": "again"})
    body = r.content.decode()
    assert r.status_code == 422 and "a project named &#x27;acme&#x27; already exists" in body and 'value="again"' in body
    assert Project.objects.count() == 1


def test_only_staff_create_projects(client, alice, bob):
    assert client.get(NEW).status_code == 302  # anonymous: to the login page
    client.force_login(alice)  # alice administers acme but is not site staff
    r = client.get(NEW)
    assert r.status_code == 403 and "Only the site&#x27;s staff create projects" in r.content.decode()
    assert client.post(NEW, {"name": "sneaky"}).status_code == 403
    assert 'data-testid="new-project-link"' not in client.get("/projects/").content.decode()
    client.force_login(bob)
    assert client.post(NEW, {"name": "sneaky"}).status_code == 403
    assert not Project.objects.filter(name="sneaky").exists()


def test_wrong_method_is_405(client, sid):
    client.force_login(sid)
    assert client.delete(NEW).status_code == 405
