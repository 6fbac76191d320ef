"""Management commands: create_api_token, import_groups, seed_demo."""

import gzip
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from grading.models import ApiToken, Comparison, Group, Membership, Project
from tests.helpers.groups import jsonl, small_group

pytestmark = pytest.mark.django_db


def test_create_api_token_prints_only_a_working_token(client, acme):
    out = StringIO()
    call_command("create_api_token", "ci-bot", "--project", "acme", "--role", "admin", stdout=out)
    secret = out.getvalue().strip()
    assert secret.startswith("gagar_") and "\n" not in secret
    membership = Membership.objects.get(user__username="ci-bot", project__name="acme")
    assert membership.role == "admin" and not membership.user.has_usable_password()
    token = ApiToken.objects.get()
    assert token.digest != secret and secret not in token.digest  # only a hash is stored
    r = client.get("/api/v1/groups/?project=acme", HTTP_AUTHORIZATION=f"Token {secret}")
    assert r.status_code == 200


def test_create_api_token_refuses_unknown_role():
    with pytest.raises(CommandError):
        call_command("create_api_token", "x", "--project", "acme", "--role", "wizard")


def test_import_groups_reports_per_line(tmp_path, acme):
    good = tmp_path / "step.jsonl.gz"
    good.write_bytes(gzip.compress(jsonl(small_group("a@1"), small_group("b@1", instance_id="t-2"))))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(jsonl(small_group("c@1", instance_id="t-3")) + b"{oops\n")
    out = StringIO()
    with pytest.raises(CommandError, match="refused"):
        call_command("import_groups", "--project", "acme", "--no-progress", str(good), str(bad), stdout=out)
    text = out.getvalue()
    assert "step.jsonl.gz: 2 lines · groups 2 created" in text
    assert "bad.jsonl: 2 lines · groups 1 created" in text and "line 2: not valid JSON" in text
    assert Group.objects.count() == 3
    out = StringIO()
    call_command("import_groups", "--project", "acme", "--no-progress", str(good), stdout=out)
    assert "groups 0 created, 0 extended, 2 unchanged" in out.getvalue()


def test_import_groups_needs_an_existing_project(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(jsonl(small_group()))
    with pytest.raises(CommandError, match="no project"):
        call_command("import_groups", "--project", "nope", "--no-progress", str(path))
    call_command("import_groups", "--project", "nope", "--create-project", "--no-progress", str(path), stdout=StringIO())
    assert Project.objects.get(name="nope").runs.count() == 1


def test_seed_demo_is_idempotent_and_mixed():
    out = StringIO()
    call_command("seed_demo", "--steps", "2", "--groups-per-step", "6", "--no-simulate", stdout=out)
    assert "12 groups created" in out.getvalue() and "Log in at" in out.getvalue()
    call_command("seed_demo", "--steps", "2", "--groups-per-step", "6", "--no-simulate", stdout=StringIO())
    groups = Group.objects.filter(in_comparison=False)
    assert groups.count() == 12
    # and a blind comparison of the demo run's first and second step, graded, made once
    comparison = Comparison.objects.get()
    assert (comparison.label_a, comparison.label_b) == ("demo-run@1", "demo-run@2")
    compared = Group.objects.filter(in_comparison=True)
    assert compared.exists() and all(g.verdicts.count() == 1 for g in compared)
    assert "comparison 'blind-eval' of demo-run@1 and demo-run@2" in out.getvalue()
    assert groups.filter(is_mixed=True).exists() and groups.filter(is_mixed=False).exists()
    assert max(g.n_rollouts for g in groups) == 8
