"""A blind comparison's figures, recomputed here independently from the judgments the database
holds, against what the API and the page report. Two reviewers judge every cross-run group blind
through the judge's form; the figures are then counted from JudgmentItem rows and the sides
ComparisonEntry keeps, by plain loops, and the intervals drawn with the same resamples."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from grading.comparisons.services import create_comparison
from grading.models import Comparison, ComparisonEntry, Group, Role
from reviews.models import Judgment, JudgmentItem
from reviews.selectors.comparisons import judged_groups
from reviews.services.queue import assign, update_policy
from tests.helpers.comparisons import two_runs
from tests.helpers.desk import as_lanes
from tests.helpers.people import member

pytestmark = pytest.mark.django_db
DIMENSIONS = ("solution_fit", "implementation_precision", "minimality", "side_effect_avoidance", "codebase_consistency")


@pytest.fixture
def judged(acme, bob, client):
    two_runs(acme)
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    comparison = create_comparison(
        project=acme, body={"name": "final", "a": {"run": "baseline"}, "b": {"run": "gagar"}, "per_side": 2}
    )
    dora = member("dora", acme, Role.REVIEWER)
    rng = np.random.default_rng(7)
    for reviewer in (bob, dora):
        client.force_login(reviewer)
        for group in Group.objects.filter(run=comparison.run).order_by("uid"):
            assign(group=group, reviewer=reviewer)
            form: dict = {"seen_version": "0"}
            for rollout in group.rollouts.order_by("index"):
                i = rollout.index
                level = int(rng.integers(1, 4))
                form[f"tier-{i}"] = f"T{level}"
                form[f"rank-{i}"] = str(2 * level - 1 + int(rng.integers(0, 2)))  # ranks follow tiers; ties happen
                for d in DIMENSIONS[: int(rng.integers(0, 6))]:  # some unscored, some partly
                    form[f"score-{i}-{d}"] = str(int(rng.integers(1, 6)))
            url = f"/projects/acme/runs/final/groups/{group.uid}/judgment/"
            r = client.post(url, as_lanes(form, reviewer, group))
            if r.status_code != 302:
                open("/tmp/fail.html", "w").write(r.content.decode())
            assert r.status_code == 302
    assert Judgment.objects.filter(group__run=comparison.run).count() == 2 * comparison.run.groups.count()
    return comparison


def _independent(comparison: Comparison) -> tuple[dict, list[int], dict]:
    """Per judgment: its candidates as (side, tier, rank, mean score or None), read from the
    database; and the group of each judgment."""
    side = dict(ComparisonEntry.objects.filter(comparison=comparison).values_list("rollout_id", "side"))
    judgments: dict[int, list[tuple]] = {}
    group_of: dict[int, int] = {}
    for item in JudgmentItem.objects.filter(judgment__group__run=comparison.run).select_related("judgment"):
        scores = list(item.scores.values())
        mean = sum(scores) / len(scores) if scores else None
        judgments.setdefault(item.judgment_id, []).append((side[item.rollout_id], item.tier, item.rank, mean))
        group_of[item.judgment_id] = item.judgment.group_id
    groups = sorted(set(group_of.values()))
    return judgments, groups, group_of


def _figure(name: str, side: str, judgments: list[list[tuple]]) -> float:
    mine = [c for j in judgments for c in j if c[0] == side]
    if name == "rubric_score":
        scored = [c[3] for c in mine if c[3] is not None]
        return sum(scored) / len(scored)
    if name == "t1_share":
        return sum(c[1] == "T1" for c in mine) / len(mine)
    if name == "win_rate":
        outcomes = []
        for j in judgments:
            for c, d in itertools.product([c for c in j if c[0] == side], [d for d in j if d[0] != side]):
                outcomes.append(1.0 if c[2] < d[2] else 0.5 if c[2] == d[2] else 0.0)
        return sum(outcomes) / len(outcomes)
    assert name == "groups_led"
    shares = []
    for j in judgments:
        top = [c for c in j if c[2] == min(d[2] for d in j)]
        shares.append(sum(c[0] == side for c in top) / len(top))
    return sum(shares) / len(shares)


def test_the_api_reports_what_the_stored_judgments_give(client, alice, judged):
    comparison = judged
    judgments, groups, group_of = _independent(comparison)
    per_group = {g: [c for jid, c in judgments.items() if group_of[jid] == g] for g in groups}
    client.force_login(alice)
    body = client.get("/api/v1/comparisons/final/", {"project": "acme"}).json()
    assert body["sides"] == {"a": {"label": "baseline@2", "steps": [2, 2]}, "b": {"label": "gagar@2", "steps": [2, 2]}}
    assert body["counts"]["groups"] == len(groups) and body["counts"]["judgments"] == 2 * len(groups)
    draws = np.random.default_rng(comparison.seed).integers(0, len(groups), size=(2000, len(groups)))
    for name in ("rubric_score", "win_rate", "groups_led", "t1_share"):
        for side in ("a", "b"):
            every = [j for g in groups for j in per_group[g]]
            got = body["figures"][name][side]
            assert got["estimate"] == pytest.approx(_figure(name, side, every), abs=1e-4), (name, side)
            resampled = [_figure(name, side, [j for i in draw for j in per_group[groups[i]]]) for draw in draws]
            low, high = np.quantile(resampled, [0.025, 0.975])
            assert (got["low"], got["high"]) == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4)), (name, side)
            assert got["low"] <= got["estimate"] <= got["high"]
    wins = body["figures"]["win_rate"]
    assert wins["a"]["estimate"] + wins["b"]["estimate"] == pytest.approx(1.0, abs=2e-4)
    led = body["figures"]["groups_led"]
    assert led["a"]["estimate"] + led["b"]["estimate"] == pytest.approx(1.0, abs=2e-4)


def test_the_page_shows_the_same_figures_and_a_graders_own(client, alice, judged, django_assert_num_queries):
    comparison = judged
    client.force_login(alice)
    api = client.get("/api/v1/comparisons/final/", {"project": "acme"}).json()
    with django_assert_num_queries(10):
        html = client.get("/projects/acme/comparisons/final/").content.decode()
    for name in ("win_rate", "groups_led", "t1_share"):
        row = re.search(rf'data-figure="{name}">(.*?)</tr>', html, re.S).group(1)
        for side in ("a", "b"):
            shown = re.search(rf'data-side="{side}">([0-9.]+) %', row).group(1)
            assert float(shown) == pytest.approx(100 * api["figures"][name][side]["estimate"], abs=0.05)
    assert "baseline@2" in html and "gagar@2" in html and 'data-testid="comparison-figures"' in html
    # No grader has judged it yet: people are the only judge offered, and asking another is refused.
    assert api["judges"] == ["people"]
    r = client.get("/api/v1/comparisons/final/", {"project": "acme", "judge": "heuristic@1"})
    assert r.status_code == 400 and r.json()["field"] == "judge"
    assert judged_groups(comparison, "people")  # (the selector the page used)
