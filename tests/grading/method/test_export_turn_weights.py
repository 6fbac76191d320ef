"""Per-token advantages in the export (docs/method.md §9, formats.md): a run turns turn weights
on, the rows store them, `?turn_weights=1` adds the column, the default rows stay as they were.

alice is acme's admin (sets the run's policy), tess a trainer (exports). Group g@1: rollouts
#0 and #1 pass, #2 and #3 fail; each has six messages. The grader (test@1) cites #0's turns
2 and 4 as wasted effort and redundant exploration, its turn 1 for something else, and #2's
turn 3 (a failing rollout: it stays uniform).
"""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from grading.models import AdvantageResult, Group, Run, StepExport
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import post_groups

pytestmark = pytest.mark.django_db(transaction=True)

MESSAGES = [{"role": "user", "content": "Fix the widget."}] + [
    {"role": "assistant", "content": f"step {k}", "action": f"cat w{k}.py", "observation": "x = 1"} for k in range(1, 6)
]


def _cite(rollout, turn, category=None):
    item = {"kind": "turn", "rollout": rollout, "locator": str(turn), "note": "went round in circles"}
    return item | ({"category": category} if category else {})


def _group(uid):
    line = small_group(uid, rewards=(1, 1, 0, 0))
    for rollout in line["rollouts"]:
        rollout["messages"] = MESSAGES
    return line


def _grade(uid):
    record_verdict(
        group=Group.objects.get(uid=uid),
        grader="test@1",
        status="valid",
        grades=[
            GradeInput(
                0,
                "T2",
                2,
                evidence=[
                    _cite(0, 2, "wasted_effort"),
                    _cite(0, 4, "redundant_exploration"),
                    _cite(0, 1),
                    _cite(2, 3, "wasted_effort"),
                ],
            ),
            GradeInput(1, "T1", 1),
        ],
    )


@pytest.fixture
def graded(client, alice_token):
    post_groups(client, alice_token, _group("g@1"))
    _grade("g@1")


def _get(client, token, **params):
    query = "&".join(f"{k}={v}" for k, v in {"run": "r1", **params}.items())
    return client.get(f"/api/v1/advantages/?{query}", HTTP_AUTHORIZATION=f"Token {token}")


def _rows(response) -> dict[int, dict]:
    assert response.status_code == 200, response.content[:300]
    return {row["index"]: row for row in map(json.loads, response.content.splitlines())}


def _turn_on(client, alice_token, on=True):
    r = client.patch(
        "/api/v1/runs/r1/?project=acme",
        data=json.dumps({"turn_weights": on}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {alice_token}",
    )
    assert r.status_code == 200, r.content
    return r.json()


def test_off_by_default_and_asking_for_the_column_says_which_setting(client, alice_token, trainer_token, graded):
    assert Run.objects.get(name="r1").turn_weights is False
    r = _get(client, trainer_token, step=1, turn_weights=1)
    assert r.status_code == 400
    assert r.json()["field"] == "turn_weights" and "PATCH /api/v1/runs/r1/" in r.json()["detail"]
    assert set(AdvantageResult.objects.values_list("turn_weights", flat=True)) == {None}  # nothing computed for it
    r = _get(client, trainer_token, step=1, turn_weights=2)
    assert r.status_code == 400 and r.json()["field"] == "turn_weights"


def test_the_weights_per_message_index_and_the_default_rows_unchanged(client, alice_token, trainer_token, graded):
    before = _get(client, trainer_token, step=1)
    assert _turn_on(client, alice_token)["turn_weights"] is True
    rows = _rows(_get(client, trainer_token, step=1, turn_weights=1))
    # #0 passed: its turns cited as waste weigh 0.5 (turn 1 was cited for something else); the rest is uniform
    assert {i: rows[i]["turn_weights"] for i in rows} == {0: {"2": 0.5, "4": 0.5}, 1: {}, 2: {}, 3: {}}
    assert list(rows[0])[-1] == "turn_weights"  # the last column
    assert rows[0]["redistributed_advantage"] > 0
    stored = dict(AdvantageResult.objects.values_list("index", "turn_weights"))
    assert stored == {0: {"2": 0.5, "4": 0.5}, 1: {}, 2: {}, 3: {}}
    # without the parameter: no such column, the same rows byte for byte as before the run turned it on
    after = _get(client, trainer_token, step=1)
    assert after.content == before.content and "turn_weights" not in after.content.decode()
    assert after["Gagar-Inputs-Version"] != before["Gagar-Inputs-Version"]  # turning it on recomputed the step


def test_csv_and_parquet_carry_the_weights_as_json_text(client, alice_token, trainer_token, graded):
    _turn_on(client, alice_token)
    r = _get(client, trainer_token, step=1, turn_weights=1, format="csv")
    assert r.status_code == 200
    table = list(csv.DictReader(io.StringIO(r.content.decode())))
    assert list(table[0])[-1] == "turn_weights"
    assert [json.loads(row["turn_weights"]) for row in table] == [{"2": 0.5, "4": 0.5}, {}, {}, {}]
    for params in ({"step": 1}, {}):  # one step (kept byte for byte) and the whole run (streamed)
        r = _get(client, trainer_token, turn_weights=1, format="parquet", **params)
        assert r.status_code == 200
        frame = pq.read_table(io.BytesIO(b"".join(r.streaming_content) if r.streaming else r.content)).to_pandas()
        assert frame.columns[-1] == "turn_weights"
        assert [json.loads(v) for v in frame["turn_weights"]] == [{"2": 0.5, "4": 0.5}, {}, {}, {}]
    plain = _get(client, trainer_token, step=1, format="parquet")
    assert "turn_weights" not in pq.read_table(io.BytesIO(plain.content)).column_names


def test_rows_taken_with_the_column_are_kept_byte_for_byte_apart_from_those_without(client, alice_token, trainer_token, graded):
    _turn_on(client, alice_token)
    first = _get(client, trainer_token, step=1, turn_weights=1)
    plain = _get(client, trainer_token, step=1)
    version = first["Gagar-Inputs-Version"]
    assert set(StepExport.objects.values_list("turn_weights", flat=True)) == {True, False}
    # a late verdict on a second grader moves the step on; the rows taken at `version` come back as they were
    record_verdict(
        group=Group.objects.get(uid="g@1"),
        grader="test@2",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T1", 1)],
    )
    now = _rows(_get(client, trainer_token, step=1, turn_weights=1))
    assert now[0]["turn_weights"] == {}  # the newest verdict cites nothing
    again = _get(client, trainer_token, step=1, turn_weights=1, inputs_version=version)
    assert again.content == first.content
    assert _get(client, trainer_token, step=1, inputs_version=version).content == plain.content


def test_a_confirmed_cheat_and_a_fallback_group_weigh_one_throughout(client, alice_token, trainer_token, graded):
    from grading.models import CheatDecision, Rollout
    from grading.verdicts.store import decide_cheat

    _turn_on(client, alice_token)
    post_groups(client, alice_token, _group("h@1"))  # no verdict: falls back once the step has no grading in flight
    decision = CheatDecision.objects.create(
        rollout=Rollout.objects.get(group__uid="g@1", index=0), source=CheatDecision.Source.REVIEWER
    )
    decide_cheat(decision=decision, confirmed=True)
    rows = [json.loads(line) for line in _get(client, trainer_token, step=1, turn_weights=1).content.splitlines()]
    assert {(row["uid"], row["index"]): row["turn_weights"] for row in rows} == {
        (uid, i): {} for uid in ("g@1", "h@1") for i in range(4)
    }


def test_the_export_reads_the_weights_in_the_queries_it_always_ran(client, alice_token, trainer_token, graded):
    """No query per group or rollout: the whole-run export asks the same with and without the
    column, and as much for three groups as for one."""
    _turn_on(client, alice_token)

    def count(**params) -> int:
        _get(client, trainer_token, **params)  # computes what is stale, so the next one only reads
        with CaptureQueriesContext(connection) as queries:
            r = _get(client, trainer_token, **params)
            b"".join(r.streaming_content)
        return len(queries)

    one_plain, one_weighted = count(), count(turn_weights=1)
    for uid in ("g@2", "g@3"):
        post_groups(client, alice_token, _group(uid))
        _grade(uid)
    assert one_plain == one_weighted == count() == count(turn_weights=1)
