"""The calibration page, the agreement API and activating a fitted mapping.

bob and dan (reviewers) judged g1@1 and g2@1, both graded by secret-grader@1; alice is
the admin who may activate; carol is in another project; tess holds a trainer token.
"""

from __future__ import annotations

import pytest

from grading.method.services.computation import refresh_stale_steps
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, FactorMapping, MappingActivation, Run, Step
from reviews.services.calibration import activate_fitted_mapping
from reviews.stats.calibration import fit_mapping
from tests.helpers.desk import GRADER

pytestmark = pytest.mark.django_db


def test_page_shows_agreement_ceiling_heatmap_fit_and_preview(client, alice, judged):
    client.force_login(alice)
    r = client.get("/projects/acme/calibration/?run=r1")
    assert r.status_code == 200
    html = r.content.decode()
    for marker in (
        'data-testid="agreement"',
        'data-testid="ceiling"',
        'data-testid="confusion"',
        'data-testid="fitted"',
        'data-testid="preview"',
        'id="heatmap"',
        'id="trend-chart"',
        'id="mapping-chart"',
        'id="lambda-chart"',
        "Cohen&#x27;s κ (quadratic)",
        "grader</span> secret-grader@1",
        'data-testid="activate"',
    ):
        assert marker in html, marker
    # g1: people's consensus T1, T3 (bob T2 / dan T3 -> median rounds to the worse), T3; g2: T2, T1, T3.
    # Grader: g1 T1, T2, T3; g2 T2, T1, T2 -> rows T1: (2, 0, 0); T2: (0, 1, 2); T3: (0, 0, 1)
    assert '<tr><th>T1</th><td class="num">2</td><td class="num">0</td><td class="num">0</td></tr>' in html
    assert '<tr><th>T2</th><td class="num">0</td><td class="num">1</td><td class="num">2</td></tr>' in html
    assert 'data-testid="n-changed">6 of 10 (2 groups)' in html  # every passing rollout of the two graded groups


def test_activating_the_fitted_mapping_versions_it_and_changes_graded_advantages_only(client, alice, judged):
    run = Run.objects.get(name="r1")
    steps = list(Step.objects.filter(run=run))
    refresh_stale_steps(steps=steps, mapping=active_mapping(run))
    before = {(r.uid, r.index): r for r in AdvantageResult.objects.filter(mapping=active_mapping(run))}
    client.force_login(alice)
    r = client.post("/projects/acme/calibration/activate/", {"run": "r1", "reason": ""}, follow=True)
    assert "needs a reason" in r.content.decode() and not MappingActivation.objects.exists()
    # 2 groups are below the default minimum (30): without the dialog's override nothing is stored
    r = client.post("/projects/acme/calibration/activate/", {"run": "r1", "reason": "two reviewers, 6 pairs"}, follow=True)
    assert "Not activated: the fit rests on too little evidence (2 judged mixed groups, 30 needed;" in r.content.decode()
    assert not MappingActivation.objects.exists() and not FactorMapping.objects.filter(source="calibrated").exists()
    r = client.post(
        "/projects/acme/calibration/activate/", {"run": "r1", "reason": "two reviewers, 6 pairs", "override": "1"}, follow=True
    )
    assert "acme-calibrated@1 is now active for r1 below the project&#x27;s minimum evidence, by override" in r.content.decode()
    mapping = FactorMapping.objects.get(source="calibrated")
    activation = MappingActivation.objects.get()
    assert (activation.mapping, activation.activated_by, activation.reason) == (mapping, alice, "two reviewers, 6 pairs")
    assert activation.overrode_minimum and mapping.fit["n_groups"] == 2
    # no grader chosen: the version that graded the judged groups, recorded on the mapping
    assert mapping.fit["scope"] == {"run": "r1", "grader": GRADER, "step": None}
    assert mapping.grader == GRADER and mapping.fit["grader"] == GRADER
    assert mapping.fit["counts"] == [[2, 0, 0], [0, 1, 2], [0, 0, 1]] and mapping.fit["n_boot"] == 1000
    assert mapping.bands["T1"] == [1.0, 1.0] and mapping.bands["T2"][0] == mapping.bands["T2"][1]
    refresh_stale_steps(steps=steps, mapping=mapping)
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
            sum(r.advantage for k, r in after.items() if k[0] == uid), abs=1e-9
        )
    # the old numbers stay reproducible under the old mapping version
    assert {k: r.redistributed_advantage for k, r in before.items()} == {
        (r.uid, r.index): r.redistributed_advantage for r in AdvantageResult.objects.filter(mapping__name="default")
    }


def test_uninformative_grader_gives_equal_factors_and_baseline_advantages(alice, judged):
    run = Run.objects.get(name="r1")
    fitted = fit_mapping([[3, 3, 3], [3, 3, 3], [3, 3, 3]], k=0)
    assert fitted.f == (1.0, 1.0, 1.0)
    mapping, _ = activate_fitted_mapping(
        run=run, fitted=fitted, grader=GRADER, user=alice, reason="uninformative", scope={}, n_judgments=27, override=True
    )  # a table with no groups recorded is below any minimum but 0
    refresh_stale_steps(steps=list(run.steps.all()), mapping=mapping)
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

    rows = (
        [{"slice": "all", "value": "all judgments"}, {"slice": "grader", "value": GRADER}]
        + [{"slice": "step", "value": n} for n in range(1, 31)]
        + [{"slice": "repo", "value": "octo/widgets"}]
    )
    shown, hidden = latest_step_slices(rows, 20)
    assert hidden == 10 and [r["value"] for r in shown if r["slice"] == "step"] == list(range(11, 31))
    assert [r["slice"] for r in shown if r["slice"] != "step"] == ["all", "grader", "repo"]
    assert latest_step_slices(rows, None) == (rows, 0)
    client.force_login(alice)
    page = client.get("/projects/acme/calibration/?run=r1&steps=all")  # one step here: nothing to leave out
    assert page.status_code == 200 and page.context["hidden_steps"] == 0 and b'data-testid="hidden-steps"' not in page.content


def _computed(run):
    refresh_stale_steps(steps=list(run.steps.all()), mapping=active_mapping(run))


def test_below_the_minimum_the_fit_says_too_little_evidence_and_the_dialog_what_activating_changes(client, alice, judged):
    run = Run.objects.get(name="r1")
    _computed(run)
    client.force_login(alice)
    html = client.get("/projects/acme/calibration/?run=r1").content.decode()
    assert 'data-testid="evidence" data-state="too-little"' in html and "<strong>Too little evidence</strong>" in html
    assert "<li>2 judged mixed groups, 30 needed</li>" in html and "<li>T3 seen in 1 pair, 5 needed</li>" in html
    assert 'data-confirm="confirm-activate"' in html and "(too little evidence)</button>" in html
    assert "It rests on <strong>2 judged mixed groups</strong>, with the grader's T1, T2, T3 seen in 2, 3, 1 pairs" in html
    assert "it changes <strong>6 of 10 rows</strong> of the active mapping <code>default@1</code> (2 groups)" in html
    assert 'data-field-name="override" data-field-value="1">Activate anyway</button>' in html
    said = float(html.split("Σ|ΔA*| = ")[1].split("<")[0])
    before = {(r.uid, r.index): r.redistributed_advantage for r in AdvantageResult.objects.filter(mapping=active_mapping(run))}
    client.post("/projects/acme/calibration/activate/", {"run": "r1", "reason": "few groups, on purpose", "override": "1"})
    mapping = active_mapping(run)
    assert mapping.source == "calibrated" and MappingActivation.objects.get().overrode_minimum
    refresh_stale_steps(steps=list(run.steps.all()), mapping=mapping)
    after = {(r.uid, r.index): r.redistributed_advantage for r in AdvantageResult.objects.filter(mapping=mapping)}
    moved = sum(abs(after[k] - before[k]) for k in before)
    assert said == pytest.approx(moved, abs=1e-4)  # what the dialog said is what activating moved
    assert sum(abs(after[k] - before[k]) > 1e-12 for k in before) == 6


def test_a_tier_without_pairs_shows_no_interval_and_says_why(client, alice, judged):
    from grading.verdicts.store import GradeInput, record_verdict

    # another grader's verdict on g1@1 gives no T3: that grader's T3 row is 0 / 0 / 0
    record_verdict(
        group=judged["g1@1"],
        grader="second-grader@1",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2), GradeInput(3, "T2", 2)],
    )
    client.force_login(alice)
    r = client.get("/projects/acme/calibration/?run=r1&grader=second-grader@1")
    html = r.content.decode()
    cell = html.split('data-testid="interval-T3">')[1].split("</td>")[0]
    assert cell.startswith("–") and "no pairs: the grader gave T3 to none of the judged rollouts, so f is the prior" in cell
    assert html.split('data-testid="interval-T2">')[1].startswith("[")
    assert r.context["mapping_chart"]["intervals"]["data"][2] is None
    assert "<li>T3 seen in 0 pairs, 5 needed</li>" in html
    body = client.get("/api/v1/agreement/?project=acme&run=r1&n_boot=50&grader=second-grader@1").json()
    assert body["fitted_mapping"]["intervals"][2] is None and body["fitted_mapping"]["intervals"][0] is not None


def test_an_admin_sets_the_minimum_and_a_fit_that_meets_it_activates_without_override(client, alice, judged):
    from grading.models import CalibrationMinimum

    client.force_login(alice)
    r = client.post("/projects/acme/calibration/minimum/", {"groups": "2", "tier_pairs": "1", "run": "r1"}, follow=True)
    assert r.redirect_chain[-1][0] == "/projects/acme/calibration/?run=r1"
    assert "Minimum evidence for acme: 2 judged mixed groups and every tier seen in at least 1 pairs." in r.content.decode()
    row = CalibrationMinimum.objects.get()
    assert (row.project.name, row.groups, row.tier_pairs, row.updated_by) == ("acme", 2, 1, alice)
    html = r.content.decode()
    assert 'data-testid="evidence" data-state="enough"' in html and "Too little evidence" not in html
    assert 'value="2" data-testid="minimum-groups"' in html and ">Activate</button>" in html
    r = client.post("/projects/acme/calibration/activate/", {"run": "r1", "reason": "enough for this project"}, follow=True)
    assert "acme-calibrated@1 is now active for r1; every step" in r.content.decode()
    assert not MappingActivation.objects.get().overrode_minimum


@pytest.mark.parametrize("min_groups, min_pairs", [("", "5"), ("-1", "5"), ("30", "x"), ("1.5", "5"), ("30", "10000001")])
def test_a_bad_minimum_is_refused_in_words_and_nothing_changes(client, alice, judged, min_groups, min_pairs):
    from grading.models import CalibrationMinimum

    client.force_login(alice)
    r = client.post("/projects/acme/calibration/minimum/", {"groups": min_groups, "tier_pairs": min_pairs}, follow=True)
    assert (
        r.status_code == 200 and "Minimum not changed:" in r.content.decode() and "must be a whole number" in r.content.decode()
    )
    assert not CalibrationMinimum.objects.exists()


def test_minimum_refusals(client, alice, bob, carol, judged):
    from grading.models import CalibrationMinimum

    url = "/projects/acme/calibration/minimum/"
    body = {"groups": "1", "tier_pairs": "1"}
    client.force_login(bob)  # a reviewer sees the minimum the page holds fits to, but may not change it
    assert 'data-testid="minimum-form"' not in client.get("/projects/acme/calibration/?run=r1").content.decode()
    assert client.post(url, body).status_code == 403
    client.force_login(carol)  # admin of another project
    assert client.post(url, body).status_code == 404
    client.force_login(alice)
    assert client.get(url).status_code == 405
    client.logout()
    assert client.post(url, body).status_code == 302
    assert not CalibrationMinimum.objects.exists()
