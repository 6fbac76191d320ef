"""GET /api/v1/graders/compare/: two graders, a jury of them and people on the same groups;
the figures recomputed independently from the same rows."""

from __future__ import annotations

import re

import numpy as np
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from sklearn.metrics import cohen_kappa_score

from grading.method.services.activation import create_mapping
from grading.method.services.computation import compute_step, refresh_stale_steps
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, Group, Role, RolloutGrade, Run
from reviews.selectors import calibration
from tests.factories import make_assignment, make_judgment, make_project
from tests.helpers.bench import EXT_UNCITED, GRADERS, GROUPS, flat, make_bench
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member
from tests.helpers.verdicts import post_verdict, verdict_body

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
    # session, user, project, membership, run; then blind groups, judgments, verdicts, grades, audits;
    # then what each fit would move: the active mapping (its activation, the default), the run's
    # steps, their stored computations (none here: no rows to read) and the graders' T1 shares
    with django_assert_num_queries(15):
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
    # ext@1's uncited verdicts (groups 2 and 3) count above; apart, they agree less
    citations = rows["ext@1"]["citations"]
    uncited_judgments = sum(t != "T1" for n in EXT_UNCITED for t in GROUPS[n][1])
    assert (citations["uncited_verdicts"], citations["uncited_judgments"]) == (2, uncited_judgments) == (2, 5)
    ext, people = flat(1).reshape(4, 4), person.reshape(4, 4)
    for part, groups in (("cited", [0, 1]), ("uncited", list(EXT_UNCITED))):
        assert citations[part]["groups"] == 2
        agree = np.mean(ext[groups] == people[groups])
        assert citations[part]["exact_agreement"]["value"] == pytest.approx(agree, abs=1e-6)
        kappa = cohen_kappa_score(ext[groups].ravel(), people[groups].ravel(), weights="quadratic", labels=[1, 2, 3])
        assert citations[part]["kappa"]["value"] == pytest.approx(kappa, abs=1e-6)
    assert citations["cited"]["exact_agreement"]["value"] == 0.875 and citations["uncited"]["exact_agreement"]["value"] == 0.5
    for name in ("heuristic@1", "jury:j@1"):  # ours cite: every verdict is on the cited side
        split = rows[name]["citations"]
        assert (split["uncited_verdicts"], split["uncited_judgments"], split["cited"]["groups"]) == (0, 0, 4)
        assert split["cited"]["exact_agreement"]["value"] == rows[name]["exact_agreement"]["value"]
        assert split["uncited"]["exact_agreement"] == {"value": None, "low": None, "high": None, "n": 0}


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


def _computed(run):
    refresh_stale_steps(steps=list(run.steps.all()), mapping=active_mapping(run))


def test_each_grader_shows_what_its_own_fit_would_move_on_the_run(bench, django_assert_num_queries):
    """Per grader: the mapping the calibration page fits on that grader alone, the credit it
    would move against the run's stored numbers (recomputed here by computing the run under
    it), and the T1 share of its tiers."""
    run = Run.objects.get(name="r1")
    _computed(run)
    body = bench.get(URL, {"project": "acme", "run": "r1", "graders": ",".join(GRADERS), "n_boot": "0"}).json()
    rows = {row["grader"]: row for row in body["graders"]}
    assert body["run_grader"] is None  # no policy grader: nothing names one
    stored = {(r.uid, r.index): r.redistributed_advantage for r in AdvantageResult.objects.filter(mapping=active_mapping(run))}
    fits = set()
    for name, column in (("heuristic@1", 0), ("ext@1", 1), ("jury:j@1", 2)):
        move = rows[name]["would_move"]
        alone = calibration.figures(project=run.project, run=run, grader=name, n_boot=0, with_slices=False)
        assert alone.grader == name and move["mapping"] == alone.fitted.bands()  # the calibration page's fit of that grader
        assert move["n_pairs"] == 16 and move["t1_share"] == pytest.approx(np.mean(flat(column) == 1), abs=1e-6)
        mapping = create_mapping(project=run.project, name=f"check-{column}", bands=move["mapping"])
        for step in run.steps.all():
            compute_step(step=step, mapping=mapping)
        then = {(r.uid, r.index): r.redistributed_advantage for r in AdvantageResult.objects.filter(mapping=mapping)}
        moved = sum(abs(then[k] - stored[k]) for k in stored)
        assert move["credit_moved"] == pytest.approx(moved, abs=1e-5)
        assert move["n_changed"] == sum(abs(then[k] - stored[k]) > 1e-12 for k in stored) and move["n_rows"] == len(stored)
        fits.add(tuple(map(tuple, move["mapping"].values())))
    assert len(fits) > 1 and any(rows[g]["would_move"]["credit_moved"] > 0 for g in GRADERS)  # the graders' fits differ
    # the page shows the same, one row per grader
    page = bench.get("/projects/acme/calibration/bench/", {"run": "r1", "grader": list(GRADERS)}).content.decode()
    table = page.split('data-testid="bench-would-move"')[1].split("</table>")[0]
    for name in GRADERS:
        cell = table.split(f'data-grader="{name}"')[1].split('data-testid="credit-moved">')[1].split("<")[0]
        assert float(cell) == pytest.approx(rows[name]["would_move"]["credit_moved"], abs=1e-4)


def test_compare_reads_the_same_number_of_queries_for_one_grader_or_three(bench, django_assert_num_queries):
    _computed(Run.objects.get(name="r1"))
    counts = []
    for graders in ("ext@1", ",".join(GRADERS)):
        cache.clear()  # the impacts are read from the stored rows, not the cache
        with CaptureQueriesContext(connection) as ctx:
            assert bench.get(URL, {"project": "acme", "run": "r1", "graders": graders, "n_boot": "0"}).status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1] == 16  # the 15 of the pin above, and the stored rows once for every grader's fit


def test_what_would_move_leaves_out_the_callers_open_blind_group(client):
    project = make_project()
    bob = member("bob", project, Role.REVIEWER)
    make_bench(project, member("dan", project, Role.REVIEWER))
    run = Run.objects.get(name="r1")
    _computed(run)
    Group.objects.update(awaits_review=False)  # dan's review is all each group wants: the queue serves bob none
    make_assignment(Group.objects.get(uid="t-0@1"), bob)  # bob still judges t-0 blind
    client.force_login(bob)
    body = client.get(URL, {"project": "acme", "run": "r1", "graders": "ext@1", "n_boot": "0"}).json()
    move = body["graders"][0]["would_move"]
    assert body["withheld_open_blind_groups"] == 1 and body["withheld_queued_groups"] == 0
    assert move["t1_share"] == pytest.approx(np.mean(flat(1)[4:] == 1), abs=1e-6)  # groups t-1..t-3 only
    assert move["n_pairs"] == 12
    stored = {(r.uid, r.index): r.redistributed_advantage for r in AdvantageResult.objects.filter(mapping=active_mapping(run))}
    mapping = create_mapping(project=project, name="check", bands=move["mapping"])
    compute_step(step=run.steps.get(), mapping=mapping)
    then = {(r.uid, r.index): r.redistributed_advantage for r in AdvantageResult.objects.filter(mapping=mapping)}
    assert move["credit_moved"] == pytest.approx(sum(abs(then[k] - stored[k]) for k in stored if k[0] != "t-0@1"), abs=1e-5)


def test_a_verdict_posted_without_evidence_is_on_the_bench_and_counted_apart(client, acme, alice, alice_token, bob):
    ingest_groups(acme, small_group("t-1@1", rewards=(1, 0, 1)), small_group("t-2@1", instance_id="t-2", rewards=(1, 0, 1)))
    assert post_verdict(client, alice_token, verdict_body(second="T2")) == (
        201,
        {"result": "stored", "grader": "acme-fleet@3", "uid": "t-1@1", "status": "valid", "uncited": []},
    )  # rollout 2's T2 cites a line of its test log
    uncited = verdict_body(second="T3", uid="t-2@1")
    del uncited["judgments"][1]["evidence"]  # a T3 for no stated reason
    code, answer = post_verdict(client, alice_token, uncited)
    assert code == 201 and answer["uncited"] == [2]
    grades = RolloutGrade.objects.filter(verdict__grader="acme-fleet@3").order_by("verdict__group__uid", "rollout__index")
    assert [(g.verdict.group.uid, g.rollout.index, g.tier, g.uncited) for g in grades] == [
        ("t-1@1", 0, "T1", False),
        ("t-1@1", 2, "T2", False),
        ("t-2@1", 0, "T1", False),
        ("t-2@1", 2, "T3", True),
    ]
    for uid in ("t-1@1", "t-2@1"):  # bob: #0 T1, #2 T2 on both
        make_judgment(Group.objects.get(uid=uid), bob, tiers={0: "T1", 2: "T2"})

    client.force_login(alice)
    body = client.get(URL, {"project": "acme", "run": "r1", "graders": "acme-fleet@3", "n_boot": "0"}).json()
    (row,) = body["graders"]
    # the uncited verdict counts: 3 of the 4 rollouts agree, the uncited T3 the one that does not
    assert row["groups"] == 2 and row["exact_agreement"]["value"] == 0.75 and row["exact_agreement"]["n"] == 4
    citations = row["citations"]
    assert (citations["uncited_verdicts"], citations["uncited_judgments"]) == (1, 1)
    assert citations["cited"]["groups"] == citations["uncited"]["groups"] == 1
    assert citations["cited"]["exact_agreement"]["value"] == 1.0 and citations["uncited"]["exact_agreement"]["value"] == 0.5

    page = client.get("/projects/acme/calibration/bench/", {"run": "r1", "grader": "acme-fleet@3"}).content.decode()
    table = page.split('data-testid="bench-citations"')[1].split("</table>")[0]
    row_html = table.split('data-grader="acme-fleet@3"')[1]
    assert 'data-testid="uncited-verdicts">1 of 2<' in row_html and 'data-testid="uncited-judgments">1<' in row_html
    assert re.findall(r'data-testid="uncited-figure">([^<]*)<', row_html)[0] == "0.500"
