"""The bench end to end, on real trajectories: the heuristic grades the run's mixed groups at
ingest, a team's own grader posts its verdicts through POST /api/v1/verdicts/, a person
judges every group, and the compare API's per-grader figures and paired difference are
recomputed here from what the database holds, with scikit-learn rather than our code."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from django.db import transaction
from sklearn.metrics import cohen_kappa_score

from grading.method.guide import RUBRIC
from grading.models import Group, Role, RolloutGrade, Verdict
from reviews.models import JudgmentItem
from reviews.services.judgments import ItemInput, submit_judgment
from tests.helpers.ingest import post_groups
from tests.helpers.people import member
from tests.helpers.real_groups import load_real_long_groups

RUN = "gemini-3-pro-swebench-long"
CODE = {"T1": 1, "T2": 2, "T3": 3}


def api(client, method, path, token, body=None, **params):
    query = "&".join(f"{k}={v}" for k, v in {"project": "acme", **params}.items())
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=orjson.dumps(body), content_type="application/json")
    return getattr(client, method)(f"{path}?{query}", **kwargs)


def fleet_tiers(group: Group) -> dict[int, str]:
    """The team's grader: the smallest passing patch T1, the largest T3 (with three or more passes), the rest T2."""
    passing = sorted(group.rollouts.filter(passed=True), key=lambda r: (r.patch_added + r.patch_removed, r.index))
    tiers = {r.index: "T2" for r in passing}
    tiers[passing[0].index] = "T1"
    if len(passing) >= 3:
        tiers[passing[-1].index] = "T3"
    return tiers


def ranked(tiers: dict[int, str]) -> list[tuple[int, str, int]]:
    order = sorted(tiers, key=lambda i: (tiers[i], i))
    return [(i, tiers[i], order.index(i) + 1) for i in sorted(tiers)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_heuristic_and_a_posted_grader_compared_against_a_person_on_real_groups(client, acme, alice, alice_token):
    bob = member("bob", acme, Role.REVIEWER)
    assert api(client, "post", "/api/v1/runs/", alice_token, {"name": RUN, "auto_grade": "heuristic"}).status_code == 201
    post_groups(client, alice_token, *load_real_long_groups(4))
    mixed = list(Group.objects.filter(run__name=RUN, is_mixed=True).select_related("step").order_by("uid"))
    assert len(mixed) >= 4, "the real trajectories give mixed groups"
    assert Verdict.objects.filter(group__in=mixed, grader="heuristic@1", status="valid").count() == len(mixed)

    rng = np.random.default_rng(7)
    for group in mixed:
        judgments = [
            {"rollout": i, "tier": t, "rank": r, "cheat": False, "scores": dict.fromkeys(RUBRIC, 3)}
            for i, t, r in ranked(fleet_tiers(group))
        ]
        body = {"run": RUN, "step": group.step.number, "uid": group.uid, "grader": "fleet@1", "judgments": judgments}
        r = api(client, "post", "/api/v1/verdicts/", alice_token, body)
        assert r.status_code == 201 and r.json()["result"] == "stored", r.content
        person = {i: str(rng.choice(["T1", "T2", "T3"])) for i in fleet_tiers(group)}
        with transaction.atomic():
            submit_judgment(reviewer=bob, group=group, items=[ItemInput(i, t) for i, t in person.items()])

    client.force_login(alice)
    r = client.get("/api/v1/graders/compare/", {"project": "acme", "run": RUN, "graders": "heuristic@1,fleet@1", "n_boot": "300"})
    assert r.status_code == 200, r.content
    body = r.json()
    rows = {row["grader"]: row for row in body["graders"]}

    # Recomputed from the rows: each passing rollout's tier by each grader and by bob.
    people = {
        (g, i): CODE[t]
        for g, i, t in JudgmentItem.objects.filter(judgment__group__in=mixed).values_list(
            "judgment__group_id", "rollout__index", "tier"
        )
    }
    keys = sorted(people)
    person = np.array([people[k] for k in keys])
    by_grader = {}
    for name in ("heuristic@1", "fleet@1"):
        tiers = {
            (g, i): CODE[t]
            for g, i, t in RolloutGrade.objects.filter(verdict__grader=name, verdict__group__in=mixed).values_list(
                "verdict__group_id", "rollout__index", "tier"
            )
        }
        by_grader[name] = grader = np.array([tiers[k] for k in keys])
        row = rows[name]
        assert row["groups"] == len(mixed)
        assert row["exact_agreement"]["value"] == pytest.approx(np.mean(grader == person), abs=1e-6)
        kappa = cohen_kappa_score(grader, person, weights="quadratic", labels=[1, 2, 3])
        assert row["kappa"]["value"] == pytest.approx(kappa, abs=1e-6)
        for figure in ("exact_agreement", "kappa"):
            assert row[figure]["low"] <= row[figure]["value"] <= row[figure]["high"]

    paired = next(p for p in body["paired"] if {p["a"], p["b"]} == {"heuristic@1", "fleet@1"})
    sign = 1 if paired["a"] == "heuristic@1" else -1
    difference = sign * (np.mean(by_grader["heuristic@1"] == person) - np.mean(by_grader["fleet@1"] == person))
    assert paired["exact_agreement"]["value"] == pytest.approx(difference, abs=1e-6)
    assert paired["exact_agreement"]["low"] <= paired["exact_agreement"]["value"] <= paired["exact_agreement"]["high"]
    between = next(p for p in body["between_graders"] if {p["a"], p["b"]} == {"heuristic@1", "fleet@1"})
    expected = cohen_kappa_score(by_grader["heuristic@1"], by_grader["fleet@1"], weights="quadratic", labels=[1, 2, 3])
    assert between["kappa"]["value"] == pytest.approx(expected, abs=1e-6)

    # the same verdict posted again changes nothing; a different one for that version is refused
    group = mixed[0]
    again = {
        "run": RUN,
        "step": group.step.number,
        "uid": group.uid,
        "grader": "fleet@1",
        "judgments": [
            {"rollout": i, "tier": t, "rank": rk, "cheat": False, "scores": dict.fromkeys(RUBRIC, 3)}
            for i, t, rk in ranked(fleet_tiers(group))
        ],
    }
    r = api(client, "post", "/api/v1/verdicts/", alice_token, again)
    assert r.status_code == 200 and r.json()["result"] == "unchanged", r.content
    again["judgments"][0]["scores"] = dict.fromkeys(RUBRIC, 4)
    assert api(client, "post", "/api/v1/verdicts/", alice_token, again).status_code == 409
