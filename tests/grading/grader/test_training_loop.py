"""The training loop on the server: a run's grading policy, auto-grading at ingest, step
status, waiting for a step, the deadline, pinned inputs versions, and one recomputation per
burst of verdicts.

alice is the project's admin (may ingest and set policy); tess holds a trainer token
(read-only exports); bob is a reviewer.
"""

from datetime import timedelta

import orjson
import pytest
from django.utils import timezone

from grading.method.services import computation as services
from grading.models import GradingJob, Group, Run, Step, StepExport, Verdict
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import post_groups
from tests.helpers.people import member

# Transactional: grading tasks and recomputations are sent on commit, as in production (eager Celery).
pytestmark = pytest.mark.django_db(transaction=True)


def api(client, method: str, path: str, token: str, body=None, **params):
    query = "&".join(f"{k}={v}" for k, v in {"project": "acme", **params}.items())
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=orjson.dumps(body), content_type="application/json")
    return getattr(client, method)(f"{path}?{query}", **kwargs)


def step_groups(run: str, step: int, n: int = 3) -> list[dict]:
    """n groups of a step: every one mixed except the last, which passes everywhere."""
    return [
        small_group(f"t-{i}@{step}", run=run, step=step, instance_id=f"t-{i}", rewards=(1, 0, 1) if i < n - 1 else (1, 1, 1))
        for i in range(n)
    ]


@pytest.fixture
def heuristic_run(client, alice_token):
    r = api(
        client, "post", "/api/v1/runs/", alice_token, {"name": "rl", "auto_grade": "heuristic", "grading_deadline_seconds": 600}
    )
    assert r.status_code == 201, r.content
    return Run.objects.get(name="rl")


# --- the policy ----------------------------------------------------------------------------


def test_admin_creates_a_run_with_its_policy_before_any_group(client, alice_token, trainer_token, heuristic_run):
    r = api(client, "get", "/api/v1/runs/rl/", trainer_token)
    assert r.status_code == 200
    assert r.json() | {"created_at": None} == {
        "name": "rl",
        "baseline": "mean",
        "auto_grade": "heuristic",
        "grading_deadline_seconds": 600,
        "grader": "heuristic@1",
        "jury": None,
        "drop_policy": {},
        "turn_weights": False,
        "settle_identical": False,
        "description": "",
        "created_at": None,
        "steps": 0,
    }
    assert [run["name"] for run in api(client, "get", "/api/v1/runs/", trainer_token).json()] == ["rl"]


def test_the_runs_list_costs_the_same_queries_for_one_run_or_many(
    client, alice_token, trainer_token, heuristic_run, django_assert_max_num_queries
):
    def listed():
        r = api(client, "get", "/api/v1/runs/", trainer_token)
        assert r.status_code == 200
        return len(r.json())

    # the token (and at most once a minute its last use), its user, membership, the runs with their step counts
    with django_assert_max_num_queries(5):
        assert listed() == 1
    for name in ("rl-2", "rl-3"):
        assert api(client, "post", "/api/v1/runs/", alice_token, {"name": name}).status_code == 201
    with django_assert_max_num_queries(5):
        assert listed() == 3


def test_patch_changes_the_policy_and_a_new_baseline_recomputes(client, alice_token, heuristic_run):
    post_groups(client, alice_token, *step_groups("rl", 1))
    before = StepExport.objects.count()
    r = api(client, "patch", "/api/v1/runs/rl/", alice_token, {"baseline": "loo", "grading_deadline_seconds": 30})
    assert r.status_code == 200, r.content
    heuristic_run.refresh_from_db()
    assert (heuristic_run.baseline, heuristic_run.grading_deadline_seconds) == ("loo", 30)
    rows = [
        orjson.loads(x) for x in api(client, "get", "/api/v1/advantages/", alice_token, run="rl", step=1).content.splitlines()
    ]
    assert {row["baseline"] for row in rows} == {"loo"} and StepExport.objects.count() == before + 1


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"grading_deadline_seconds": 0}, "grading_deadline_seconds", "from 1 to"),
        ({"grading_deadline_seconds": -5}, "grading_deadline_seconds", "from 1 to"),
        ({"grading_deadline_seconds": "soon"}, "grading_deadline_seconds", "whole number"),
        ({"auto_grade": "llm"}, "auto_grade", "needs GRADER_BASE_URL and GRADER_MODEL"),
        ({"auto_grade": "sometimes"}, "auto_grade", "must be one of none, heuristic, llm"),
        ({"baseline": "median"}, "baseline", "must be one of mean, loo, grpo"),
        ({"colour": "blue"}, "colour", "unknown field"),
        ({"run": "other"}, "run", "unknown field"),  # a field named like the service's own argument: 500 once
    ],
)
def test_refused_policy_values_name_the_field_and_change_nothing(client, alice_token, heuristic_run, body, field, words):
    r = api(client, "patch", "/api/v1/runs/rl/", alice_token, body)
    assert r.status_code == 400
    assert r.json()["field"] == field and words in r.json()["detail"]
    heuristic_run.refresh_from_db()
    assert (heuristic_run.auto_grade, heuristic_run.grading_deadline_seconds, heuristic_run.baseline) == (
        "heuristic",
        600,
        "mean",
    )


def test_a_new_run_with_a_field_named_project_is_refused_not_a_500(client, alice_token):
    r = api(client, "post", "/api/v1/runs/", alice_token, {"name": "p-run", "project": None})
    assert r.status_code == 400 and r.json()["field"] == "project" and "unknown field" in r.json()["detail"]
    assert not Run.objects.filter(name="p-run").exists()


def test_llm_auto_grading_is_refused_when_set_not_when_a_job_fails(client, alice_token):
    r = api(client, "post", "/api/v1/runs/", alice_token, {"name": "llm-run", "auto_grade": "llm"})
    assert r.status_code == 400 and r.json()["field"] == "auto_grade"
    assert not Run.objects.filter(name="llm-run").exists()


def test_run_names_are_checked_and_unique(client, alice_token, heuristic_run):
    assert api(client, "post", "/api/v1/runs/", alice_token, {"name": "rl"}).json()["field"] == "name"
    assert api(client, "post", "/api/v1/runs/", alice_token, {"name": "a/b"}).status_code == 400
    assert api(client, "post", "/api/v1/runs/", alice_token, {}).json()["field"] == "name"
    assert api(client, "post", "/api/v1/runs/", alice_token, ["rl"]).status_code == 400


def test_only_an_admin_sets_policy(client, trainer_token, heuristic_run, acme):
    assert api(client, "patch", "/api/v1/runs/rl/", trainer_token, {"auto_grade": "none"}).status_code == 403
    assert api(client, "post", "/api/v1/runs/", trainer_token, {"name": "x"}).status_code == 403
    assert client.get("/api/v1/runs/rl/?project=acme").status_code in (401, 403)
    assert api(client, "get", "/api/v1/runs/nope/", trainer_token).status_code == 404


def test_admin_sets_the_policy_on_the_run_page(client, alice, heuristic_run):
    client.force_login(alice)
    page = client.get("/projects/acme/runs/rl/")
    assert b"Grading policy" in page.content and b"heuristic@1" in page.content
    r = client.post(
        "/projects/acme/runs/rl/policy/",
        {"baseline": "grpo", "auto_grade": "none", "grading_deadline_seconds": "120"},
        follow=True,
    )
    assert b"Grading policy saved." in r.content
    heuristic_run.refresh_from_db()
    assert (heuristic_run.baseline, heuristic_run.auto_grade, heuristic_run.grading_deadline_seconds) == ("grpo", "none", 120)
    r = client.post(
        "/projects/acme/runs/rl/policy/", {"baseline": "grpo", "auto_grade": "none", "grading_deadline_seconds": "0"}, follow=True
    )
    assert b"Policy not changed" in r.content


def test_a_reviewer_sees_the_policy_but_cannot_change_it(client, acme, heuristic_run):
    bob = member("bob", acme, "reviewer")
    client.force_login(bob)
    assert b"Save policy" not in client.get("/projects/acme/runs/rl/").content
    assert client.post("/projects/acme/runs/rl/policy/", {"auto_grade": "none"}).status_code == 403


# --- auto-grading and step status ------------------------------------------------------------


def test_posting_a_step_grades_its_mixed_groups_once(client, alice_token, trainer_token, heuristic_run):
    report = post_groups(client, alice_token, *step_groups("rl", 1))
    assert report["grading"] == {"queued": 2, "refused": None}
    assert GradingJob.objects.count() == 2 and Verdict.objects.count() == 2  # eager Celery: graded in the request
    again = post_groups(client, alice_token, *step_groups("rl", 1))  # the trainer retries the same step
    assert again["grading"]["queued"] == 0 and again["groups"]["unchanged"] == 3
    assert GradingJob.objects.count() == 2 and Verdict.objects.count() == 2

    r = api(client, "get", "/api/v1/steps/1/", trainer_token, run="rl")
    assert r.status_code == 200
    status = r.json()
    assert {k: status[k] for k in ("groups", "mixed", "graded", "invalid", "timeout", "pending", "fallback", "final")} == {
        "groups": 3,
        "mixed": 2,
        "graded": 2,
        "invalid": 0,
        "timeout": 0,
        "pending": 0,
        "fallback": 0,
        "final": True,
    }
    assert status["inputs_version"] == Step.objects.get().inputs_version


def test_without_auto_grading_a_step_waits_for_its_deadline_then_falls_back(client, alice_token, trainer_token, acme):
    post_groups(client, alice_token, *step_groups("manual", 1))
    status = api(client, "get", "/api/v1/steps/1/", trainer_token, run="manual").json()
    assert (status["pending"], status["fallback"], status["final"]) == (2, 0, False) and status["deadline"]
    Group.objects.update(created_at=timezone.now() - timedelta(seconds=601))  # the default 600 s passed
    status = api(client, "get", "/api/v1/steps/1/", trainer_token, run="manual").json()
    assert (status["pending"], status["fallback"], status["final"], status["deadline"]) == (0, 2, True, None)
    rows = [
        orjson.loads(x)
        for x in api(client, "get", "/api/v1/advantages/", trainer_token, run="manual", step=1).content.splitlines()
    ]
    assert {r["status"] for r in rows if r["uid"] != "t-2@1"} == {"fallback"}


def test_grading_a_step_again_restarts_its_deadline(client, alice_token, acme):
    post_groups(client, alice_token, *step_groups("manual", 1))
    Group.objects.update(created_at=timezone.now() - timedelta(seconds=601))
    r = api(client, "post", "/api/v1/steps/1/grade/", alice_token, {"backend": "heuristic"}, run="manual")
    assert r.status_code == 202, r.content
    assert r.json()["queued"] == 2 and r.json()["graded"] == 2 and r.json()["final"]


@pytest.mark.parametrize(
    ("path", "params", "code", "words"),
    [
        ("/api/v1/steps/9/", {"run": "rl"}, 404, "has no step 9"),
        ("/api/v1/steps/1/", {"run": "nope"}, 404, "no run 'nope'"),
        ("/api/v1/steps/1/", {"run": "%00"}, 400, "NUL"),  # PostgreSQL refuses NUL in text: refused before any view
        ("/api/v1/steps/99999999999/", {"run": "rl"}, 404, "has no step 99999999999"),  # past the 32-bit column
        ("/api/v1/runs/%00/", {}, 404, "NUL"),
        ("/api/v1/advantages/", {"run": "rl", "step": 99999999999}, 400, "non-negative integer"),
        ("/api/v1/steps/1/", {}, 400, "'run' is required"),
        ("/api/v1/advantages/", {"run": "rl", "step": 1, "wait": 301}, 400, "from 0 to 300"),
        ("/api/v1/advantages/", {"run": "rl", "step": 1, "wait": -1}, 400, "whole number"),
        ("/api/v1/advantages/", {"run": "rl", "wait": 5}, 400, "needs 'step'"),
        ("/api/v1/advantages/", {"run": "rl", "step": 1, "inputs_version": "x"}, 400, "whole number"),
        ("/api/v1/advantages/", {"run": "rl", "step": 1, "inputs_version": 999}, 404, "never served at inputs_version 999"),
    ],
)
def test_bad_requests_get_clear_errors(client, alice_token, trainer_token, heuristic_run, path, params, code, words):
    post_groups(client, alice_token, *step_groups("rl", 1))
    r = api(client, "get", path, trainer_token, **params)
    assert r.status_code == code and words in r.json()["detail"]


def test_grade_endpoint_refusals(client, alice_token, trainer_token, heuristic_run):
    post_groups(client, alice_token, *step_groups("rl", 1))
    assert api(client, "post", "/api/v1/steps/1/grade/", trainer_token, {}, run="rl").status_code == 403
    r = api(client, "post", "/api/v1/steps/1/grade/", alice_token, {"backend": "oracle"}, run="rl")
    assert r.status_code == 400 and r.json()["field"] == "backend"
    r = api(client, "post", "/api/v1/steps/1/grade/", alice_token, {"backend": "llm"}, run="rl")
    assert r.status_code == 400 and "GRADER_BASE_URL" in r.json()["detail"]


def test_the_step_grading_page_shows_the_same_numbers(client, alice, alice_token, heuristic_run):
    post_groups(client, alice_token, *step_groups("rl", 1))
    client.force_login(alice)
    html = client.get("/projects/acme/runs/rl/steps/1/grading/").content.decode()
    assert 'data-final="true"' in html and '<dt>Graded</dt><dd id="step-graded">2</dd>' in html
    assert '<dt>Fall back</dt><dd id="step-fallback">0</dd>' in html


# --- what the trainer takes ------------------------------------------------------------------


def test_a_final_step_answers_a_wait_at_once_with_its_version_and_counts(client, alice_token, trainer_token, heuristic_run):
    post_groups(client, alice_token, *step_groups("rl", 1))
    r = api(client, "get", "/api/v1/advantages/", trainer_token, run="rl", step=1, wait=300)
    assert r.status_code == 200
    assert r["Gagar-Step-Final"] == "true"
    assert r["Gagar-Inputs-Version"] == str(Step.objects.get().inputs_version)
    assert r["Gagar-Step-Counts"] == "groups=3, mixed=2, graded=2, invalid=0, timeout=0, pending=0, fallback=0, settled=0"
    rows = [orjson.loads(x) for x in r.content.splitlines()]
    assert {row["status"] for row in rows if row["uid"] != "t-2@1"} == {"graded"}
    assert {row["tier"] for row in rows if row["passed"] and row["uid"] != "t-2@1"} <= {"T1", "T2", "T3"}


def test_a_late_verdict_changes_the_pages_not_the_rows_a_trainer_took(client, alice_token, trainer_token, acme):
    post_groups(client, alice_token, *step_groups("manual", 1))
    Group.objects.update(created_at=timezone.now() - timedelta(seconds=601))
    taken = api(client, "get", "/api/v1/advantages/", trainer_token, run="manual", step=1, wait=10)
    assert taken["Gagar-Step-Final"] == "true"
    version = taken["Gagar-Inputs-Version"]
    group = Group.objects.get(uid="t-0@1")
    record_verdict(group=group, grader="late@1", status="valid", grades=[GradeInput(0, "T1", 1), GradeInput(2, "T3", 2)])

    now = api(client, "get", "/api/v1/advantages/", trainer_token, run="manual", step=1)
    assert now["Gagar-Inputs-Version"] != version and now.content != taken.content
    assert any(orjson.loads(x)["status"] == "graded" for x in now.content.splitlines())
    again = api(client, "get", "/api/v1/advantages/", trainer_token, run="manual", step=1, inputs_version=version)
    assert again.status_code == 200 and again["Gagar-Inputs-Version"] == version
    assert again.content == taken.content  # byte for byte


def test_a_burst_of_verdicts_recomputes_its_step_once(client, alice_token, heuristic_run, monkeypatch):
    computed = []
    real = services.compute_step
    monkeypatch.setattr(services, "compute_step", lambda **kw: computed.append(kw["step"].number) or real(**kw))
    report = post_groups(client, alice_token, *step_groups("rl", 1, n=13))  # 12 mixed groups, one ingest batch
    assert report["grading"]["queued"] == 12 and Verdict.objects.count() == 12
    assert computed == [1]  # after the last verdict, not after each of the twelve
