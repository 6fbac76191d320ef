"""Step metrics through the API: a trainer logs its scalars by name, idempotent per (run, step,
name); a refused post stores nothing and names its field; the run's metrics come back beside
the desk's own figures and the warnings they raise, in a fixed number of queries."""

from __future__ import annotations

import orjson
import pytest

from grading.models import Role, StepMetric
from grading.projects.tokens import issue_api_token
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups


def post(client, token, body, run="r1", project="acme"):
    return client.post(
        f"/api/v1/runs/{run}/metrics/?project={project}",
        data=body if isinstance(body, bytes) else orjson.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def get(client, token, query="", run="r1"):
    r = client.get(f"/api/v1/runs/{run}/metrics/?project=acme{query}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert r.status_code == 200, r.content
    return r.json()


def stored(run="r1"):
    return sorted(StepMetric.objects.filter(run__name=run).values_list("step_number", "name", "value"))


@pytest.fixture
def run(acme):
    ingest_groups(acme, small_group("g1@1", rewards=(1, 0, 1)), small_group("g2@2", step=2, rewards=(1, 0, 0)))
    return acme.runs.get(name="r1")


@pytest.mark.django_db
def test_logging_is_idempotent_and_a_new_value_replaces_the_old(client, trainer_token, run):
    r = post(client, trainer_token, {"step": 1, "metrics": {"actor/entropy": 0.36, "response_length/mean": 812}})
    assert r.status_code == 201 and r.json() == {"run": "r1", "created": 2, "changed": 0, "unchanged": 0}
    r = post(client, trainer_token, {"step": 1, "metrics": {"actor/entropy": 0.36, "response_length/mean": 812}})
    assert r.status_code == 200 and r.json()["unchanged"] == 2
    r = post(
        client, trainer_token, [{"step": 1, "metrics": {"actor/entropy": 0.41}}, {"step": 2, "metrics": {"actor/entropy": 0.5}}]
    )
    assert r.status_code == 201 and (r.json()["created"], r.json()["changed"]) == (1, 1)
    assert stored() == [(1, "actor/entropy", 0.41), (1, "response_length/mean", 812.0), (2, "actor/entropy", 0.5)]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"step": 1, "metrics": {"ok": 1.0, "done": True}}, 'metrics["done"]'),
        ({"step": 1, "metrics": {"ok": 1.0, "text": "high"}}, 'metrics["text"]'),
        ({"step": 1, "metrics": {"x" * 101: 1.0}}, 'metrics["' + "x" * 100 + '"]'),
        (b'{"step": 1, "metrics": {"big": 1' + b"0" * 400 + b"}}", 'metrics["big"]'),
        ({"step": -1, "metrics": {"ok": 1.0}}, "step"),
        ({"step": "3", "metrics": {"ok": 1.0}}, "step"),
        ({"step": 1, "metrics": {}}, "metrics"),
        ({"step": 1, "metrics": {"ok": 1.0}, "extra": 1}, "extra"),
        ([{"step": 1, "metrics": {"ok": 1.0}}, {"step": 2, "metrics": {"bad": None}}], 'steps[1].metrics["bad"]'),
        ([], "body"),
        ("entropy=0.4", "body"),
    ],
)
def test_a_refused_post_names_its_field_and_stores_nothing(client, trainer_token, run, body, field):
    r = post(client, trainer_token, body)
    assert r.status_code == 400 and r.json()["field"] == field, r.content
    assert stored() == []


@pytest.mark.django_db
def test_who_may_log_and_read(client, run, bob, other_project, trainer_token):
    _, reviewer = issue_api_token(username="bob", project_name="acme", role=Role.REVIEWER)
    assert post(client, reviewer, {"step": 1, "metrics": {"x": 1}}).status_code == 403
    assert get(client, reviewer)["run"] == "r1"  # a reviewer sees the run's health
    assert post(client, trainer_token, {"step": 1, "metrics": {"x": 1}}, run="nope").status_code == 404
    _, elsewhere = issue_api_token(username="otto", project_name="other", role=Role.ADMIN)
    assert post(client, elsewhere, {"step": 1, "metrics": {"x": 1}}, project="acme").status_code in (403, 404)
    assert stored() == []


@pytest.mark.django_db
def test_the_runs_metrics_beside_the_desks_and_the_warnings(client, trainer_token, run, django_assert_num_queries):
    for step in range(1, 13):
        rising, falling = 0.2 + 0.04 * step, 0.45 - 0.01 * step
        r = post(client, trainer_token, {"step": step, "metrics": {"critic/score/mean": rising, "eval/swe_bench": falling}})
        assert r.status_code == 201

    with django_assert_num_queries(12):  # token and project, the run, the mapping, 5 series, the steps' mixed counts
        answer = get(client, trainer_token)
    assert answer["steps"] == list(range(1, 13))
    assert answer["trainer"]["critic/score/mean"][0] == [1, pytest.approx(0.24)]
    assert answer["desk"]["pass_rate"] == [[1, pytest.approx(2 / 3, abs=1e-6)], [2, pytest.approx(1 / 3, abs=1e-6)]]
    assert answer["desk"]["mixed_share"] == [[1, 1.0], [2, 1.0]]
    (warning,) = answer["warnings"]
    assert warning["kind"] == "hacking" and warning["steps"] == [1, 12] and "eval/swe_bench fell" in warning["evidence"][1]

    narrowed = get(client, trainer_token, "&names=eval/swe_bench&from=3&to=5")
    assert list(narrowed["trainer"]) == ["eval/swe_bench"] and [s for s, _ in narrowed["trainer"]["eval/swe_bench"]] == [3, 4, 5]
    assert narrowed["desk"] == {} and narrowed["warnings"] == []  # three steps are less than a window


@pytest.mark.django_db
def test_the_step_status_a_trainer_reads_carries_the_warnings_up_to_that_step(client, trainer_token, run):
    for step in range(1, 13):
        post(
            client,
            trainer_token,
            {"step": step, "metrics": {"critic/score/mean": 0.2 + 0.04 * step, "eval/swe": 0.45 - 0.01 * step}},
        )

    def status(number):
        r = client.get(f"/api/v1/steps/{number}/?project=acme&run=r1", HTTP_AUTHORIZATION=f"Bearer {trainer_token}")
        assert r.status_code == 200, r.content
        return r.json()

    assert status(2)["warnings"] == []  # two steps are less than a window
    assert status(2)["groups"] == 1
    ingest_groups(run.project, *[small_group(f"g{n}@{n}", step=n, rewards=(1, 0)) for n in range(3, 13)])
    (warning,) = status(12)["warnings"]
    assert warning["kind"] == "hacking" and warning["steps"][1] == 12
