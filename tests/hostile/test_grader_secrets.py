"""A project admin cannot make the server read out its environment through a grader definition.

A defined grader names the environment variables that hold its endpoint and key. Before, any
name was accepted: `endpoint_env=DJANGO_SECRET_KEY`, and the next campaign or auto-grade policy
answered 400 with `GRADER_BASE_URL '<the secret>' is not an http(s) URL`; `api_key_env` naming
a secret sent it as the bearer key to any endpoint. Now a definition may name only the pairs the
operator lists in GRADER_ENDPOINT_ENVS, and no answer, stored error or log line carries a value.

People: alice is admin of acme (her token too).
"""

from __future__ import annotations

import logging

import orjson
import pytest
from django.test import override_settings

from grading.jobs.campaigns import CampaignError, Scope, start_campaign
from grading.jobs.grade import grade_group
from grading.models import Campaign, GraderVersion, GradingJob, Group, Verdict
from grading.registry.backends import GraderUnavailable
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

SECRET = "s3cr3t-Value-that-must-never-show-0123456789"
ALLOWED = {"JUDGE_URL": "JUDGE_KEY", "LOCAL_URL": ""}


@pytest.fixture
def secrets_in_env(monkeypatch):
    for name in ("DJANGO_SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "JUDGE_KEY"):
        monkeypatch.setenv(name, f"{SECRET}-{name}")


@pytest.fixture(autouse=True)
def operator_allows_two_endpoints():
    with override_settings(GRADER_ENDPOINT_ENVS=ALLOWED):
        yield


def define(client, token, **fields):
    body = {"name": "judge", "model": "m"} | fields
    return client.post(
        "/api/v1/graders/?project=acme",
        data=orjson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"endpoint_env": "DJANGO_SECRET_KEY"}, "endpoint_env"),
        ({"endpoint_env": "DATABASE_URL"}, "endpoint_env"),
        ({"endpoint_env": "CELERY_BROKER_URL"}, "endpoint_env"),
        ({"endpoint_env": "HOME"}, "endpoint_env"),
        ({"endpoint_env": "JUDGE_URL", "api_key_env": "DJANGO_SECRET_KEY"}, "api_key_env"),
        # a key the operator pairs with another endpoint is never sent to this one
        ({"endpoint_env": "LOCAL_URL", "api_key_env": "JUDGE_KEY"}, "api_key_env"),
        ({"endpoint_env": "JUDGE_KEY"}, "endpoint_env"),
    ],
)
def test_a_definition_names_only_the_operators_pairs(client, alice_token, acme, secrets_in_env, fields, field):
    r = define(client, alice_token, **fields)
    assert r.status_code == 400 and r.json()["field"] == field, r.content
    assert SECRET not in r.content.decode()
    assert not GraderVersion.objects.exists()


@pytest.mark.django_db
def test_the_operators_pairs_are_accepted_and_the_answer_names_them(client, alice_token, acme, secrets_in_env):
    r = define(client, alice_token, endpoint_env="JUDGE_URL", api_key_env="JUDGE_KEY")
    assert r.status_code == 201, r.content
    assert define(client, alice_token, name="local", endpoint_env="LOCAL_URL").status_code == 201
    listed = client.get("/api/v1/graders/?project=acme", HTTP_AUTHORIZATION=f"Bearer {alice_token}")
    assert SECRET not in listed.content.decode()


def stored_before(acme, endpoint_env: str, api_key_env: str = "") -> GraderVersion:
    """A version defined before the allowlist existed, as a database may still hold it."""
    from grading.models import Grader

    grader = Grader.objects.create(project=acme, name="old", backend=Grader.Backend.LLM)
    return GraderVersion.objects.create(
        grader=grader,
        project=acme,
        version="1",
        name="old@1",
        model="m",
        endpoint_env=endpoint_env,
        api_key_env=api_key_env,
        prompt_version="1",
        guide_version="",
        fingerprint=f"fp-{endpoint_env}-{api_key_env}",
    )


def patch_run(client, token, body):
    return client.patch(
        "/api/v1/runs/r1/?project=acme",
        data=orjson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("endpoint_env", "api_key_env"), [("DJANGO_SECRET_KEY", ""), ("JUDGE_URL", "DATABASE_URL")])
def test_a_stored_version_naming_a_secret_never_shows_or_sends_it(
    client, alice_token, acme, secrets_in_env, caplog, endpoint_env, api_key_env
):
    ingest_groups(acme, small_group("g@1", rewards=(1, 0, 1)))
    group = Group.objects.get(uid="g@1")
    stored_before(acme, endpoint_env, api_key_env)
    caplog.set_level(logging.DEBUG)

    r = patch_run(client, alice_token, {"auto_grade": "old@1"})
    assert r.status_code == 400 and r.json()["field"] == "auto_grade", r.content
    assert SECRET not in r.content.decode() and "GRADER_ENDPOINT_ENVS" in r.json()["detail"]

    r = client.post(
        "/api/v1/campaigns/?project=acme",
        data=orjson.dumps({"grader": "old@1", "scope": {"run": "r1"}}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {alice_token}",
    )
    assert r.status_code == 400 and SECRET not in r.content.decode(), r.content
    with pytest.raises(CampaignError) as refused:
        start_campaign(project=acme, grader="old@1", scope=Scope(Campaign.Scope.RUN, group.run))
    assert SECRET not in str(refused.value) and not Campaign.objects.exists()

    with pytest.raises(GraderUnavailable) as unavailable:
        grade_group(group_id=group.pk, backend="old@1")
    assert SECRET not in str(unavailable.value)
    stored = [*GradingJob.objects.values_list("error", flat=True), *Verdict.objects.values_list("errors", flat=True)]
    assert SECRET not in repr(stored)
    assert SECRET not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_malformed_endpoint_value_is_named_by_its_variable_not_shown(client, alice_token, acme, monkeypatch):
    """An operator's mistake (a key put where the URL goes) is reported by name only."""
    ingest_groups(acme, small_group("g@1", rewards=(1, 0, 1)))
    monkeypatch.setenv("JUDGE_URL", SECRET)
    assert define(client, alice_token, endpoint_env="JUDGE_URL").status_code == 201
    r = patch_run(client, alice_token, {"auto_grade": "judge@1"})
    assert r.status_code == 400 and SECRET not in r.content.decode(), r.content
    assert "$JUDGE_URL" in r.json()["detail"]
    monkeypatch.setenv("JUDGE_URL", f"https://user:{SECRET}@judge.invalid/v1")
    r = patch_run(client, alice_token, {"auto_grade": "judge@1"})
    assert r.status_code == 400 and SECRET not in r.content.decode(), r.content
