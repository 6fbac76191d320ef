"""GET /api/v1/graders/compare/: two graders, a jury of them and people on the same groups;
the figures recomputed independently from the same rows."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from grading.models import Role
from tests.factories import make_project
from tests.helpers.bench import flat, make_bench
from tests.helpers.people import member

pytestmark = pytest.mark.django_db

URL = "/api/v1/graders/compare/"


@pytest.fixture
def bench(client):
    project = make_project()
    admin = member("alice", project, Role.ADMIN)
    make_bench(project, member("bob", project, Role.REVIEWER))
    client.force_login(admin)
    return client


def test_compare_recomputes_per_grader_figures_and_the_paired_difference(bench, django_assert_num_queries):
    # session, user, project, membership, run; then blind groups, judgments, verdicts, grades, audits
    with django_assert_num_queries(10):
        response = bench.get(URL, {"project": "acme", "run": "r1", "graders": "heuristic@1,ext@1,jury:j@1", "n_boot": "200"})
    assert response.status_code == 200, response.content
    body = response.json()
    rows = {row["grader"]: row for row in body["graders"]}
    person = flat(3)
    for name, column in (("heuristic@1", 0), ("ext@1", 1), ("jury:j@1", 2)):
        row = rows[name]
        assert row["groups"] == 4
        assert row["exact_agreement"]["value"] == pytest.approx(np.mean(flat(column) == person), abs=1e-6)
        kappa = cohen_kappa_score(flat(column), person, weights="quadratic", labels=[1, 2, 3])
        assert row["kappa"]["value"] == pytest.approx(kappa, abs=1e-6)
        assert row["kappa"]["low"] <= row["kappa"]["value"] <= row["kappa"]["high"]
    paired = next(p for p in body["paired"] if (p["a"], p["b"]) == ("heuristic@1", "ext@1"))
    difference = np.mean(flat(0) == person) - np.mean(flat(1) == person)
    assert paired["exact_agreement"]["value"] == pytest.approx(difference, abs=1e-6)
    assert paired["exact_agreement"]["low"] <= paired["exact_agreement"]["value"] <= paired["exact_agreement"]["high"]
    members_kappa = cohen_kappa_score(flat(0), flat(1), weights="quadratic", labels=[1, 2, 3])
    assert rows["jury:j@1"]["jury"]["mean_kappa"] == pytest.approx(members_kappa, abs=1e-6)
    assert rows["jury:j@1"]["jury"]["n_eff"] == pytest.approx(2 / (1 + members_kappa), abs=1e-6)
    assert "jury" not in rows["ext@1"]
    assert rows["ext@1"]["usage_per_group"] == {"tokens": 120.0, "prompt_tokens": 100.0, "completion_tokens": 20.0, "cost": 0.01}
    between = next(p for p in body["between_graders"] if (p["a"], p["b"]) == ("heuristic@1", "ext@1"))
    assert between["kappa"]["value"] == pytest.approx(members_kappa, abs=1e-6)
    assert body["human_ceiling"]["n_groups"] == 0  # one person per group


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"graders": ""}, "graders"),
        ({"graders": "a@1,a@1"}, "graders"),
        ({"graders": ",".join(f"g{i}@1" for i in range(9))}, "graders"),
        ({"graders": "a@1", "n_boot": "x"}, "n_boot"),
        ({"graders": "a@1", "n_boot": "9999"}, "n_boot"),
    ],
)
def test_bad_parameters_name_the_field(bench, params, field):
    response = bench.get(URL, {"project": "acme", "run": "r1", **params})
    assert response.status_code == 400
    assert list(response.json()["fields"]) == [field]


def test_run_is_required(bench):
    response = bench.get(URL, {"project": "acme", "graders": "heuristic@1"})
    assert response.status_code == 400 and "run" in response.content.decode()
