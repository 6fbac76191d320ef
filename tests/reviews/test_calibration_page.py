"""The calibration page, the agreement API and activating a fitted mapping.

bob and dan (reviewers) judged g1@1 and g2@1, both graded by secret-grader@1; alice is
the admin who may activate; carol is in another project; tess holds a trainer token.
"""

from __future__ import annotations

import pytest

from grading.method.services import active_mapping, ensure_computed_many
from grading.models import AdvantageResult, FactorMapping, MappingActivation, Run, Step
from reviews.services.calibration import activate_fitted_mapping
from reviews.stats.calibration import fit_mapping
from tests.reviews.conftest import GRADER

pytestmark = pytest.mark.django_db


def test_page_shows_agreement_ceiling_heatmap_fit_and_preview(client, alice, judged):
    client.force_login(alice)
    r = client.get("/projects/acme/calibration/?run=r1")
    assert r.status_code == 200
    html = r.content.decode()
    for marker in ('data-testid="agreement"', 'data-testid="ceiling"', 'data-testid="confusion"', 'data-testid="fitted"',
                   'data-testid="preview"', 'id="heatmap"', 'id="trend-chart"', 'id="mapping-chart"', 'id="lambda-chart"',
                   "Cohen&#x27;s κ (quadratic)", "grader</span> secret-grader@1", 'data-testid="activate"'):
        assert marker in html, marker
    # g1: people's consensus T1, T3 (bob T2 / dan T3 -> median rounds to the worse), T3; g2: T2, T1, T3.
    # Grader: g1 T1, T2, T3; g2 T2, T1, T2 -> rows T1: (2, 0, 0); T2: (0, 1, 2); T3: (0, 0, 1)
    assert "<tr><th>T1</th><td class=\"num\">2</td><td class=\"num\">0</td><td class=\"num\">0</td></tr>" in html
    assert "<tr><th>T2</th><td class=\"num\">0</td><td class=\"num\">1</td><td class=\"num\">2</td></tr>" in html
    assert 'data-testid="n-changed">6 of 10 (2 groups)' in html  # every passing rollout of the two graded groups


def test_activating_the_fitted_mapping_versions_it_and_changes_graded_advantages_only(client, alice, judged):
    run = Run.objects.get(name="r1")
    steps = list(Step.objects.filter(run=run))
    ensure_computed_many(steps=steps, mapping=active_mapping(run))
    before = {(r.uid, r.index): r for r in AdvantageResult.objects.filter(mapping=active_mapping(run))}
    client.force_login(alice)
    r = client.post("/projects/acme/calibration/activate/", {"run": "r1", "reason": ""}, follow=True)
    assert "needs a reason" in r.content.decode() and not MappingActivation.objects.exists()
    r = client.post("/projects/acme/calibration/activate/", {"run": "r1", "reason": "two reviewers, 6 pairs"}, follow=True)
    assert "acme-calibrated@1 is now active for r1" in r.content.decode()
    mapping = FactorMapping.objects.get(source="calibrated")
    activation = MappingActivation.objects.get()
    assert (activation.mapping, activation.activated_by, activation.reason) == (mapping, alice, "two reviewers, 6 pairs")
    assert mapping.fit["scope"] == {"run": "r1", "grader": None, "step": None}
    assert mapping.fit["counts"] == [[2, 0, 0], [0, 1, 2], [0, 0, 1]] and mapping.fit["n_boot"] == 1000
    assert mapping.bands["T1"] == [1.0, 1.0] and mapping.bands["T2"][0] == mapping.bands["T2"][1]
    ensure_computed_many(steps=steps, mapping=mapping)
    after = {(r.uid, r.index): r for r in AdvantageResult.objects.filter(mapping=mapping)}
    assert after.keys() == before.keys()
    for key, row in after.items():
        old = before[key]
        if row.status != "graded" or not row.passed:
            assert row.redistributed_advantage == old.redistributed_advantage, key  # fallback, filtered, failing: untouched
    changed = [k for k, row in after.items() if abs(row.redistributed_advantage - before[k].redistributed_advantage) > 1e-12]
    assert changed and all(after[k].status == "graded" for k in changed)
    for uid in {k[0] for k in after}:  # sum-preserving per group
        assert sum(r.redistributed_advantage for k, r in after.items() if k[0] == uid) == pytest.approx(
            sum(r.advantage for k, r in after.items() if k[0] == uid), abs=1e-9)
    # the old numbers stay reproducible under the old mapping version
    assert {k: r.redistributed_advantage for k, r in before.items()} == {
        (r.uid, r.index): r.redistributed_advantage for r in AdvantageResult.objects.filter(mapping__name="default")}


def test_uninformative_grader_gives_equal_factors_and_baseline_advantages(alice, judged):
    run = Run.objects.get(name="r1")
    fitted = fit_mapping([[3, 3, 3], [3, 3, 3], [3, 3, 3]], k=0)
    assert fitted.f == (1.0, 1.0, 1.0)
    mapping, _ = activate_fitted_mapping(run=run, fitted=fitted, user=alice, reason="uninformative", scope={}, n_judgments=27)
    ensure_computed_many(steps=list(run.steps.all()), mapping=mapping)
    rows = list(AdvantageResult.objects.filter(mapping=mapping))
    assert rows and all(r.redistributed_advantage == pytest.approx(r.advantage, abs=1e-12) for r in rows)


def test_calibration_refusals(client, bob, carol, judged):
    client.force_login(bob)  # a reviewer reads the page but may not activate
    assert client.get("/projects/acme/calibration/").status_code == 200
    assert client.post("/projects/acme/calibration/activate/", {"run": "r1", "reason": "x" * 5}).status_code == 403
    client.force_login(carol)
    assert client.get("/projects/acme/calibration/").status_code == 404
    client.logout()
    assert client.get("/projects/acme/calibration/").status_code == 302


def test_agreement_api(client, alice, carol, trainer_token, judged):
    client.force_login(alice)
    body = client.get("/api/v1/agreement/?project=acme&run=r1&n_boot=200&slices=true").json()
    assert body["n_groups"] == 2 and body["graders"] == [GRADER] and body["active_mapping"] == "default@1"
    kappa = body["figures"]["kappa"]
    assert kappa["lo"] <= kappa["value"] <= kappa["hi"] and kappa["n"] == 6
    assert body["confusion"] == [[2, 0, 0], [0, 1, 2], [0, 0, 1]]
    assert body["ceiling"]["n_groups"] == 1 and body["ceiling"]["figures"]["exact_agreement"]["value"] == pytest.approx(2 / 3)
    assert body["fitted_mapping"]["bands"]["T1"] == [1.0, 1.0]
    assert [s["value"] for s in body["slices"]][:2] == ["all judgments", GRADER]
    r = client.get("/api/v1/agreement/", HTTP_AUTHORIZATION=f"Token {trainer_token}")
    assert r.status_code == 200 and r.json()["n_groups"] == 2
    assert client.get("/api/v1/agreement/?project=acme&n_boot=x").status_code == 400
    plain = client.get("/api/v1/agreement/?project=acme&run=r1&n_boot=0").json()  # point figures, no intervals
    assert plain["figures"]["kappa"]["lo"] is None and plain["fitted_mapping"]["intervals"] is None
    assert client.get("/api/v1/agreement/?project=acme&run=nope").status_code == 404
    assert client.get("/api/v1/agreement/?project=acme&grader=other@1").json()["n_groups"] == 0
    client.force_login(carol)
    assert client.get("/api/v1/agreement/?project=acme").status_code == 404
    client.logout()
    assert client.get("/api/v1/agreement/?project=acme").status_code in (401, 403)


def test_figures_are_computed_once_per_frame_contents_and_again_when_a_judgment_changes(client, alice, dan, judged, monkeypatch):
    """The calibration page keeps each report by the contents of the judgments it summarises:
    a second view resamples nothing; a changed judgment recomputes exactly the reports whose
    rows changed (here every report of the run: one step, one grader, one repo)."""
    from django.core.cache import cache

    from reviews.selectors import calibration as data
    from reviews.services.judgments import ItemInput, submit_judgment

    cache.clear()
    calls = []
    real = data.report_from_statistics
    monkeypatch.setattr(data, "report_from_statistics", lambda *a, **k: calls.append(1) or real(*a, **k))
    client.force_login(alice)
    first = client.get("/projects/acme/calibration/?run=r1").context["overall"]
    assert calls, "the page computed no report"
    n_first = len(calls)
    calls.clear()
    assert client.get("/projects/acme/calibration/?run=r1").context["overall"] == first
    assert calls == []  # nothing resampled the second time, and the same figures
    submit_judgment(reviewer=dan, group=judged["g2@1"], items=[ItemInput(0, "T3"), ItemInput(1, "T3"), ItemInput(3, "T1")])
    changed = client.get("/projects/acme/calibration/?run=r1").context["overall"]
    assert changed != first and 0 < len(calls) <= n_first


def test_the_agreement_table_keeps_the_latest_steps_unless_asked_for_all(client, alice, judged):
    from reviews.selectors.calibration import latest_step_slices

    rows = ([{"slice": "all", "value": "all judgments"}, {"slice": "grader", "value": GRADER}]
            + [{"slice": "step", "value": n} for n in range(1, 31)] + [{"slice": "repo", "value": "octo/widgets"}])
    shown, hidden = latest_step_slices(rows, 20)
    assert hidden == 10 and [r["value"] for r in shown if r["slice"] == "step"] == list(range(11, 31))
    assert [r["slice"] for r in shown if r["slice"] != "step"] == ["all", "grader", "repo"]
    assert latest_step_slices(rows, None) == (rows, 0)
    client.force_login(alice)
    page = client.get("/projects/acme/calibration/?run=r1&steps=all")  # one step here: nothing to leave out
    assert page.status_code == 200 and page.context["hidden_steps"] == 0 and b'data-testid="hidden-steps"' not in page.content
