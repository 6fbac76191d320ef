"""GET /api/v1/grader-bench/: every judged group with every grader's verdict and every
person's judgment, as gagar-grader-bench/1 JSON Lines and as Parquet, the same data."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.contrib.auth import get_user_model

from grading.models import Group, Role, Step
from reviews.models import Assignment
from tests.factories import make_assignment, make_group, make_project
from tests.helpers.bench import EXT_UNCITED, GRADERS, GROUPS, flat, make_bench
from tests.helpers.people import member

pytestmark = pytest.mark.django_db

URL = "/api/v1/grader-bench/"


@pytest.fixture
def project(client):
    project = make_project()
    client.force_login(member("alice", project, Role.ADMIN))
    make_bench(project, member("bob", project, Role.REVIEWER))
    return project


def lines(response) -> list[dict]:
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def test_jsonl_has_every_judged_group_with_every_verdict_and_judgment(client, project, django_assert_num_queries):
    response = client.get(URL, {"project": "acme", "run": "r1"})
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    # streamed after the view answered: the group ids, then six queries per chunk of groups
    with django_assert_num_queries(7):
        body = lines(response)
    assert [line["uid"] for line in body] == [f"t-{n}@1" for n in range(len(GROUPS))]
    first = body[0]
    assert first["format"] == "gagar-grader-bench/1" and first["step"] == 1
    assert sorted(v["grader"] for v in first["verdicts"]) == sorted(GRADERS)
    jury = next(v for v in first["verdicts"] if v["grader"] == "jury:j@1")
    assert jury["jury"] == {"members": ["heuristic@1", "ext@1"]}
    ext = next(v for v in first["verdicts"] if v["grader"] == "ext@1")
    assert [g["tier"] for g in ext["grades"]] == list(GROUPS[0][1]) and ext["usage"]["cost_usd"] == 0.01
    assert not any(g["uncited"] for g in ext["grades"])  # ext@1 cited on t-0@1, not on t-2@1 and t-3@1 (EXT_UNCITED)
    late = next(v for v in body[EXT_UNCITED[0]]["verdicts"] if v["grader"] == "ext@1")
    assert [g["uncited"] for g in late["grades"]] == [t != "T1" for t in GROUPS[EXT_UNCITED[0]][1]]
    assert [(j["rater"], j["kind"], [i["tier"] for i in j["items"]]) for j in first["judgments"]] == [
        ("bob", "review", list(GROUPS[0][3]))
    ]


def test_unjudged_groups_are_left_out(client, project):
    make_group("unjudged@1", step=Step.objects.get())
    assert "unjudged@1" not in [line["uid"] for line in lines(client.get(URL, {"project": "acme", "run": "r1"}))]


def test_parquet_holds_the_same_tiers_long(client, project):
    response = client.get(URL, {"project": "acme", "run": "r1", "format": "parquet"})
    assert response.status_code == 200 and response["Content-Type"] == "application/vnd.apache.parquet"
    table = pq.read_table(io.BytesIO(response.content)).to_pandas()
    assert len(table) == len(GROUPS) * 4 * 4  # groups x rollouts x (three graders and bob)
    wide = table.pivot_table(index=["uid", "rollout"], columns="rater", values="tier", aggfunc="first")
    codes = {"T1": 1, "T2": 2, "T3": 3}
    np.testing.assert_array_equal(wide["heuristic@1"].map(codes).to_numpy(), flat(0))
    np.testing.assert_array_equal(wide["bob"].map(codes).to_numpy(), flat(3))
    assert set(table["source"]) == {"grader", "review"}
    uncited = table[table["uncited"].notna() & table["uncited"].astype(bool)]
    assert set(uncited["rater"]) == {"ext@1"} and len(uncited) == sum(t != "T1" for n in EXT_UNCITED for t in GROUPS[n][1])
    assert table.loc[table["source"] == "review", "uncited"].isna().all()  # people's rows say nothing of citations


def test_bad_format_names_the_field_and_open_blind_work_is_a_409(client, project):
    response = client.get(URL, {"project": "acme", "run": "r1", "format": "csv"})
    assert response.status_code == 400 and list(response.json()["fields"]) == ["format"]
    alice = get_user_model().objects.get(username="alice")
    make_assignment(Group.objects.get(uid="t-0@1"), alice, status=Assignment.Status.OPEN)
    assert client.get(URL, {"project": "acme", "run": "r1"}).status_code == 409


def test_a_reviewer_may_not_export(client, project):
    client.force_login(member("rita", project, Role.REVIEWER))
    assert client.get(URL, {"project": "acme", "run": "r1"}).status_code == 403
