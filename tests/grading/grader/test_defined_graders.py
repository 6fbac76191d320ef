"""A project's own LLM graders: defined through the API by configuration (model, the names of
the environment variables holding endpoint and key, budgets, the guide of the moment), each
change a new version, graded against the local scripted model server like the built-in one,
and usable as a jury's member."""

import orjson
import pytest
from django.test import override_settings

from grading.jobs.campaigns import CampaignError, Scope, start_campaign
from grading.jobs.grade import grade_group, queue_step
from grading.models import Campaign, Group, Verdict
from grading.registry.backends import GraderUnavailable, grader_for, grader_name
from grading.registry.defined import define_grader
from grading.registry.juries import member_backends, save_jury
from tests.helpers.fake_openai import FakeOpenAI, scripted_model
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

B = {"name": "judge-b", "model": "model-b", "endpoint_env": "JUDGE_B_URL", "api_key_env": "JUDGE_B_KEY"}


@pytest.fixture(autouse=True)
def operator_allows_judge_b():
    """The operator lets definitions name judge-b's variables (GRADER_ENDPOINT_ENVS)."""
    with override_settings(GRADER_ENDPOINT_ENVS={"JUDGE_B_URL": "JUDGE_B_KEY"}):
        yield


def api(client, method, token, body=None):
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=orjson.dumps(body), content_type="application/json")
    return getattr(client, method)("/api/v1/graders/?project=acme", **kwargs)


@pytest.mark.django_db
def test_each_change_is_a_new_version_and_the_same_configuration_is_the_version_it_is(client, alice_token, acme):
    r = api(client, "post", alice_token, B)
    assert r.status_code == 201 and r.json()["grader"] == "judge-b@1", r.content
    assert r.json()["endpoint_env"] == "JUDGE_B_URL" and r.json()["budgets"]["max_turns"] == 24
    assert api(client, "post", alice_token, B).status_code == 200  # unchanged
    r = api(client, "post", alice_token, B | {"budgets": {"max_turns": 40}})
    assert r.status_code == 201 and r.json()["grader"] == "judge-b@2"
    listed = api(client, "get", alice_token).json()
    assert [(g["name"], g["defined"], [v["grader"] for v in g["versions"]]) for g in listed] == [
        ("judge-b", True, ["judge-b@1", "judge-b@2"])
    ]
    assert "secret" not in orjson.dumps(listed).decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (B | {"endpoint_env": "https://api.example.org/v1"}, "endpoint_env"),  # a value, not a variable's name
        (B | {"api_key_env": "sk-live-123"}, "api_key_env"),
        (B | {"name": "heuristic"}, "name"),
        (B | {"name": "llm:gpt"}, "name"),
        (B | {"name": "jury:x"}, "name"),
        (B | {"budgets": {"max_turns": 1}}, "budgets.max_turns"),
        (B | {"budgets": {"temperature": 1}}, "budgets"),
        (B | {"backend": "heuristic"}, "backend"),
        (B | {"api_key": "sk-live-123"}, "api_key"),
        ({k: v for k, v in B.items() if k != "model"}, "model"),
        (B | {"tool_mode": "xml"}, "tool_mode"),
        (B | {"request": {"messages": []}}, "request"),
        (B | {"request": "temperature=0"}, "request"),
    ],
)
def test_refused_definitions_name_the_field_and_store_nothing(client, alice_token, acme, body, field):
    r = api(client, "post", alice_token, body)
    assert r.status_code == 400 and r.json()["field"] == field, r.content
    assert api(client, "get", alice_token).json() == []


@pytest.mark.django_db
def test_the_protocol_is_part_of_a_version_and_reaches_the_grader(client, alice_token, acme, monkeypatch):
    assert api(client, "post", alice_token, B).json()["tool_mode"] == "tools"
    r = api(client, "post", alice_token, B | {"tool_mode": "json", "request": {"temperature": 0}})
    assert r.status_code == 201 and r.json()["grader"] == "judge-b@2", r.content
    assert (r.json()["tool_mode"], r.json()["request"]) == ("json", {"temperature": 0})
    assert api(client, "post", alice_token, B | {"tool_mode": "json", "request": {"temperature": 0}}).status_code == 200

    monkeypatch.setenv("JUDGE_B_URL", "http://127.0.0.1:9/v1")
    with override_settings(GRADER_ALLOW_PRIVATE_NETWORK=True):
        grader = grader_for("judge-b@2", acme.pk)
        assert (grader.name, grader.tool_mode, grader.request) == ("judge-b@2", "json", {"temperature": 0})
        assert grader_for("judge-b@1", acme.pk).tool_mode == "tools"


@pytest.mark.django_db
def test_only_an_admin_defines_a_grader(client, acme, bob):
    client.force_login(bob)
    r = client.post("/api/v1/graders/?project=acme", data=orjson.dumps(B), content_type="application/json")
    assert r.status_code == 403
    assert client.get("/api/v1/graders/?project=acme").status_code == 200


@pytest.mark.django_db
def test_budgets_other_than_the_defaults_are_in_the_built_in_llm_graders_name(acme):
    with override_settings(GRADER_BASE_URL="https://grader.example.org/v1", GRADER_MODEL="m"):
        assert grader_name("llm", acme.pk) == "llm:m@1"
        with override_settings(GRADER_MAX_TURNS=40):
            assert grader_name("llm", acme.pk) == "llm:m@1.t40"


@pytest.mark.django_db(transaction=True)
def test_a_defined_grader_grades_from_its_environment_and_sits_on_a_jury(acme, monkeypatch):
    ingest_groups(acme, small_group("g@1", rewards=(1, 0, 1)))
    group = Group.objects.get(uid="g@1")
    define_grader(project=acme, data=B | {"budgets": {"max_turns": 6}})
    with pytest.raises(GraderUnavailable, match=r"\$JUDGE_B_URL"):
        queue_step(step=group.step, backend="judge-b@1")
    with FakeOpenAI(responder=scripted_model(2)) as fake, override_settings(GRADER_ALLOW_PRIVATE_NETWORK=True):
        monkeypatch.setenv("JUDGE_B_URL", fake.base_url)
        monkeypatch.setenv("JUDGE_B_KEY", "sk-test-b")
        verdict = grade_group(group_id=group.pk, backend="judge-b@1")
        again = grade_group(group_id=group.pk, backend="judge-b@1")
    assert (verdict.grader, verdict.status) == ("judge-b@1", Verdict.Status.VALID)
    assert again.pk == verdict.pk and len(fake.requests) == 3  # get_task, one tool call, the verdict: then nothing
    assert {r["model"] for r in fake.requests} == {"model-b"}
    assert verdict.raw["usage"]["prompt_tokens"] > 0
    jury, _ = save_jury(project=acme, name="pair", members=["heuristic@1", "judge-b@1"], rule="majority")
    assert member_backends(jury) == ["heuristic", "judge-b@1"]


@pytest.mark.django_db(transaction=True)
def test_a_campaign_runs_a_defined_grader_and_refuses_one_whose_endpoint_is_not_set(acme, monkeypatch):
    ingest_groups(acme, *[small_group(f"g{i}@1", instance_id=f"t-{i}", rewards=(1, 0, 1)) for i in range(2)])
    run = Group.objects.get(uid="g0@1").run
    define_grader(project=acme, data=B)
    with pytest.raises(CampaignError, match=r"\$JUDGE_B_URL") as refused:
        start_campaign(project=acme, grader="judge-b@1", scope=Scope(Campaign.Scope.RUN, run))
    assert refused.value.field == "grader" and not Campaign.objects.exists()
    with FakeOpenAI(responder=scripted_model(1)) as fake, override_settings(GRADER_ALLOW_PRIVATE_NETWORK=True):
        monkeypatch.setenv("JUDGE_B_URL", fake.base_url)
        campaign = start_campaign(project=acme, grader="judge-b@1", scope=Scope(Campaign.Scope.RUN, run))
    campaign.refresh_from_db()
    assert (campaign.status, campaign.graded, campaign.failed) == ("done", 2, 0), campaign.error
    assert campaign.cost_usd is None  # the configured prices are the built-in model's, not this one's
    assert Verdict.objects.filter(grader="judge-b@1", status="valid").count() == 2


def run_api(client, token, run, body):
    return client.patch(
        f"/api/v1/runs/{run}/?project=acme",
        data=orjson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


@pytest.mark.django_db(transaction=True)
def test_a_runs_auto_grade_names_a_defined_grader_pinned_to_a_version(client, alice_token, acme, monkeypatch):
    """The run policy names a defined grader as it names a built-in: a bare name is pinned to its
    newest version (defining the grader again changes no run), and ingest grades with it."""
    ingest_groups(acme, small_group("g@1", rewards=(1, 0, 1)))
    define_grader(project=acme, data=B)
    define_grader(project=acme, data=B | {"budgets": {"max_turns": 6}})
    r = run_api(client, alice_token, "r1", {"auto_grade": "judge-b"})
    assert r.status_code == 400 and r.json()["field"] == "auto_grade" and "$JUDGE_B_URL" in r.json()["detail"], r.content
    with FakeOpenAI(responder=scripted_model(2)) as fake, override_settings(GRADER_ALLOW_PRIVATE_NETWORK=True):
        monkeypatch.setenv("JUDGE_B_URL", fake.base_url)
        r = run_api(client, alice_token, "r1", {"auto_grade": "judge-b"})
        assert r.status_code == 200, r.content
        assert (r.json()["auto_grade"], r.json()["grader"]) == ("judge-b@2", "judge-b@2")
        define_grader(project=acme, data=B | {"budgets": {"max_turns": 8}})  # judge-b@3: the run keeps @2
        ingest_groups(acme, small_group("h@1", instance_id="t-2", rewards=(0, 1)))
        pinned = run_api(client, alice_token, "r1", {"auto_grade": "judge-b@1"}).json()["auto_grade"]
        assert run_api(client, alice_token, "r1", {"auto_grade": "judge-b@2"}).status_code == 200
    assert pinned == "judge-b@1"
    run = Group.objects.get(uid="h@1").run
    run.refresh_from_db()
    assert run.auto_grade == "judge-b@2"
    assert list(Verdict.objects.values_list("group__uid", "grader", "status")) == [("h@1", "judge-b@2", "valid")]
    assert {req["model"] for req in fake.requests} == {"model-b"}


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["judge-c", "judge-b@9", "", 3, None, "x" * 300])
def test_an_auto_grade_that_names_no_grader_is_refused_by_its_field(client, alice_token, acme, value):
    ingest_groups(acme, small_group("g@1", rewards=(1, 0, 1)))
    define_grader(project=acme, data=B)
    r = run_api(client, alice_token, "r1", {"auto_grade": value})
    assert r.status_code == 400 and r.json()["field"] == "auto_grade", r.content
    assert Group.objects.get(uid="g@1").run.auto_grade == "none"


@pytest.mark.django_db
def test_the_run_page_offers_the_defined_graders_newest_versions(client, alice, acme, monkeypatch):
    ingest_groups(acme, small_group("g@1", rewards=(1, 0, 1)))
    define_grader(project=acme, data=B)
    define_grader(project=acme, data=B | {"budgets": {"max_turns": 6}})
    client.force_login(alice)
    html = client.get("/projects/acme/runs/r1/").content.decode()
    assert '<option value="judge-b@2">judge-b@2: model-b</option>' in html and 'value="judge-b@1"' not in html
    monkeypatch.setenv("JUDGE_B_URL", "https://judge.example.org/v1")
    monkeypatch.setattr("grading.registry.backends.check_grader_url", lambda url, variable: None)  # no DNS lookup from a test
    r = client.post(
        "/projects/acme/runs/r1/policy/", {"auto_grade": "judge-b@1", "baseline": "mean", "grading_deadline_seconds": "600"}
    )
    assert r.status_code == 302
    html = client.get("/projects/acme/runs/r1/").content.decode()
    assert '<option value="judge-b@1" selected>judge-b@1 (an older version)</option>' in html
    assert "Auto-grading: <strong>judge-b@1</strong>" in html
