"""Rollouts a trainer dropped: ingested with their reason, the run's drop policy, the export.

alice is the project's admin (sets the policy), tess a trainer (posts nothing here, exports).
"""

from __future__ import annotations

import json

import pytest

from grading.models import Group, Rollout, Step
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import post_groups, post_lines

pytestmark = pytest.mark.django_db(transaction=True)


def _export(client, token, **params) -> tuple[dict, dict]:
    query = "&".join(f"{k}={v}" for k, v in {"run": "r1", "step": 1, **params}.items())
    r = client.get(f"/api/v1/advantages/?{query}", HTTP_AUTHORIZATION=f"Token {token}")
    assert r.status_code == 200, r.content[:300]
    rows = [json.loads(line) for line in r.content.splitlines()]
    return {row["index"]: row for row in rows}, r


def _patch(client, token, body):
    return client.patch(
        "/api/v1/runs/r1/?project=acme",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )


@pytest.fixture
def dropped_step(client, alice_token):
    group = small_group("g@1", rewards=(1, 1, 0, 0))
    group["rollouts"][3]["dropped"] = "timeout"
    post_groups(client, alice_token, group)
    record_verdict(
        group=Group.objects.get(uid="g@1"),
        grader="test@1",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T3", 2)],
    )
    return Step.objects.get(number=1)


def test_a_dropped_rollout_is_stored_with_its_reason(dropped_step):
    assert list(Rollout.objects.order_by("index").values_list("dropped", flat=True)) == ["", "", "", "timeout"]


def test_mask_by_default_then_recompute_when_the_policy_says_so(client, alice_token, trainer_token, dropped_step):
    rows, first = _export(client, trainer_token)
    assert [round(rows[i]["redistributed_advantage"], 6) for i in range(4)] == [0.666667, 0.333333, -0.5, -0.5]
    assert rows[3]["dropped"] == "timeout" and rows[3]["drop_mode"] == "mask" and rows[0]["dropped"] is None
    version = first["Gagar-Inputs-Version"]

    r = _patch(client, alice_token, {"drop_policy": {"timeout": "recompute"}})
    assert r.status_code == 200, r.content
    assert r.json()["drop_policy"] == {"timeout": "recompute"}
    rows, second = _export(client, trainer_token)
    assert [round(rows[i]["redistributed_advantage"], 6) for i in range(4)] == [0.444444, 0.222222, -0.666667, 0.0]
    assert rows[3]["status"] == "dropped" and rows[3]["drop_mode"] == "recompute"
    # the choice moved the inputs version on; the rows taken before are still served as they were
    assert second["Gagar-Inputs-Version"] != version
    old, _ = _export(client, trainer_token, inputs_version=version)
    assert old[3]["drop_mode"] == "mask"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"drop_policy": {"timeout": "skip"}}, "drop_policy"),
        ({"drop_policy": ["timeout"]}, "drop_policy"),
    ],
)
def test_a_bad_policy_is_a_400_naming_the_field(client, alice_token, dropped_step, body, field):
    r = _patch(client, alice_token, body)
    assert r.status_code == 400 and r.json()["field"] == field, r.content


def test_a_bad_reason_is_refused_naming_the_field(client, alice_token):
    group = small_group("h@1", rewards=(1, 0))
    group["rollouts"][1]["dropped"] = "Timed Out!"
    r = post_lines(client, alice_token, jsonl(group))
    assert r.status_code == 422, r.content  # every line refused
    assert "rollouts[1].dropped" in r.content.decode()
