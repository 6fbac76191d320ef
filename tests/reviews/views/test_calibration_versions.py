"""Calibration fits one grader version: editing the rubric guide makes the LLM grader a new
version, and verdicts of the old and the new version on the same run are never pooled into
one fit; a fit of one version is activated only for a run that version grades.

Run r1 of acme, five judged groups t-0..t-4 (bob's tiers): the LLM grader under the method's
guide (OLD) graded t-0..t-3, under the edited guide (NEW) t-2..t-4, so t-2 and t-3 hold a
verdict of each and the newest verdict of a group is NEW's there."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import override_settings

from grading.method.guide import DEFAULT_DIMENSIONS
from grading.method.services.activation import create_mapping
from grading.method.tiers import TIER_DESCRIPTIONS, TIERS
from grading.models import FactorMapping, MappingActivation, Role, Run, Verdict
from grading.registry.backends import grader_name
from reviews.selectors import calibration as data
from tests.factories import make_group, make_judgment, make_project, make_run, make_step, make_verdict
from tests.helpers.bench import ranked
from tests.helpers.people import member

pytestmark = pytest.mark.django_db

LLM = override_settings(GRADER_BASE_URL="https://grader.example.org/v1", GRADER_MODEL="judge-model")
CODE = {"T1": 0, "T2": 1, "T3": 2}
BOB = [
    ("T1", "T2", "T3", "T3"),
    ("T2", "T1", "T1", "T3"),
    ("T3", "T1", "T2", "T2"),
    ("T1", "T1", "T2", "T3"),
    ("T2", "T3", "T1", "T1"),
]
OLD_TIERS = {0: ("T1", "T3", "T3", "T3"), 1: ("T2", "T2", "T1", "T3"), 2: ("T3", "T1", "T1", "T2"), 3: ("T1", "T2", "T2", "T3")}
NEW_TIERS = {2: ("T3", "T1", "T2", "T2"), 3: ("T2", "T1", "T2", "T3"), 4: ("T2", "T3", "T1", "T2")}


def guide_form(t1: str) -> dict:
    data = {f"tier-{t}": TIER_DESCRIPTIONS[t] for t in TIERS}
    for d in DEFAULT_DIMENSIONS.values():
        data[f"meaning-{d.name}"], data[f"example-{d.name}"] = d.meaning, d.example
    return {**data, "tier-T1": t1}


def counts(version: dict) -> list[list[int]]:
    """The (grader tier, bob's tier) table of one version's groups, counted here by hand."""
    table = [[0] * 3 for _ in range(3)]
    for n, tiers in version.items():
        for grader_tier, person_tier in zip(tiers, BOB[n], strict=True):
            table[CODE[grader_tier]][CODE[person_tier]] += 1
    return table


@pytest.fixture
def versions(client):
    """OLD and NEW, the LLM grader's names before and after alice edits the guide."""
    project = make_project()
    alice = member("alice", project, Role.ADMIN)
    bob = member("bob", project, Role.REVIEWER)
    with LLM:
        old = grader_name("llm", project.pk)
        client.force_login(alice)
        assert client.post("/projects/acme/guide/", guide_form("T1: would be merged as is here")).status_code == 302
        new = grader_name("llm", project.pk)
    step = make_step(make_run(project))
    for n, tiers in enumerate(BOB):
        group = make_group(f"t-{n}@1", step=step, rewards=(1, 0, 1, 0))
        if n in OLD_TIERS:
            make_verdict(group, grader=old, tiers=ranked(OLD_TIERS[n]))
        if n in NEW_TIERS:
            make_verdict(group, grader=new, tiers=ranked(NEW_TIERS[n]))
        make_judgment(group, bob, tiers=ranked(tiers))
    return {"old": old, "new": new, "project": project, "run": Run.objects.get(), "alice": alice}


def test_editing_the_guide_makes_a_new_llm_grader_version(versions):
    old, new = versions["old"], versions["new"]
    assert old == "llm:judge-model@1" and new.startswith("llm:judge-model@1.g") and len(new) == len(old) + 10


def test_calibration_fits_one_version_never_the_newest_verdict_of_each_group(versions):
    project, run, old, new = versions["project"], versions["run"], versions["old"], versions["new"]
    shown = data.figures(project=project, run=run, n_boot=0)
    # no policy grader: the version that graded the most judged groups (OLD, four against three)
    assert shown.grader == old and shown.graders == [old] and shown.versions == {old: 4, new: 3}
    assert [list(map(int, row)) for row in shown.fitted.counts] == counts(OLD_TIERS)
    assert shown.overall["confusion"] == counts(OLD_TIERS) and shown.overall["n_groups"] == 4
    chosen = data.figures(project=project, run=run, grader=new, n_boot=0)
    assert chosen.grader == new and shown.versions == chosen.versions
    assert [list(map(int, row)) for row in chosen.fitted.counts] == counts(NEW_TIERS)
    grader_rows = {row["value"]: row["n_groups"] for row in shown.slices or [] if row["slice"] == "grader"}
    assert grader_rows == {old: 4, new: 3}  # the agreement table still compares the versions, each on its own groups


@pytest.mark.parametrize("keep", ["old", "new"])
def test_a_versions_figures_are_those_of_its_groups_alone(versions, keep):
    project, run = versions["project"], versions["run"]
    grader, other = versions[keep], versions["new" if keep == "old" else "old"]
    with_both = data.figures(project=project, run=run, grader=grader, n_boot=200)
    Verdict.objects.filter(grader=other).delete()
    cache.clear()
    alone = data.figures(project=project, run=run, grader=grader, n_boot=200)
    assert alone.grader == grader and alone.versions == {grader: len(OLD_TIERS if keep == "old" else NEW_TIERS)}
    assert with_both.overall == alone.overall and with_both.fitted == alone.fitted
    assert with_both.ceiling == alone.ceiling and with_both.trend == alone.trend and with_both.n_judgments == alone.n_judgments


def test_the_runs_grader_is_the_default_and_another_versions_fit_is_refused(client, versions):
    run, old, new, alice = versions["run"], versions["old"], versions["new"], versions["alice"]
    Run.objects.filter(pk=run.pk).update(auto_grade=Run.AutoGrade.LLM)  # the run's policy: the LLM grader, today's guide
    client.force_login(alice)
    with LLM:
        page = client.get("/projects/acme/calibration/?run=r1")
        html = page.content.decode()
        assert page.context["fits"]["grader"] == new and f"Figures and fit of <code>{new}</code> (the run&#x27;s grader)" in html
        assert f'<option value="{new}" selected>{new} (3 judged groups)</option>' in html
        assert f'<option value="{old}">{old} (4 judged groups)</option>' in html
        assert 'data-testid="activate"' in html and 'data-testid="grader-mismatch"' not in html
        html = client.get(f"/projects/acme/calibration/?run=r1&grader={old}").content.decode()
        assert 'data-testid="grader-mismatch"' in html and 'data-testid="activate"' not in html
        refused = client.post(
            "/projects/acme/calibration/activate/",
            {"run": "r1", "grader": old, "reason": "the old guide's fit", "override": "1"},
            follow=True,
        ).content.decode()
        assert f"Not activated: the fit cannot be activated for r1: it was fitted on {old}&#x27;s verdicts" in refused
        assert f"is graded by {new}" in refused
        assert not FactorMapping.objects.filter(source="calibrated").exists() and not MappingActivation.objects.exists()
        done = client.post(
            "/projects/acme/calibration/activate/", {"run": "r1", "reason": "today's guide", "override": "1"}, follow=True
        )
        assert "acme-calibrated@1 is now active for r1" in done.content.decode()
    mapping = FactorMapping.objects.get(source="calibrated")
    assert mapping.grader == new and mapping.fit["grader"] == new and mapping.fit["counts"] == counts(NEW_TIERS)
    assert MappingActivation.objects.get().mapping == mapping


def test_the_api_refuses_a_fit_for_a_run_another_grader_grades_and_takes_manual_mappings(client, versions):
    project, run, old, new = versions["project"], versions["run"], versions["old"], versions["new"]
    client.force_login(versions["alice"])
    fitted = create_mapping(
        project=project, name="old-fit", bands={t: [1.0, 1.0] for t in TIERS}, source="calibrated", grader=old
    )
    # no policy grader, and the run's groups hold verdicts of both versions: no fit of one of them is in force here
    r = client.post(f"/api/v1/mappings/{fitted.pk}/activate/?project=acme", {"run": "r1", "reason": "x" * 5}, "application/json")
    assert r.status_code == 409 and r.json()["grader"] == old and r.json()["run_grader"] is None
    assert "names no grader in its policy and holds verdicts of other graders" in r.json()["detail"]
    Run.objects.filter(pk=run.pk).update(auto_grade=Run.AutoGrade.LLM)
    with LLM:
        r = client.post(
            f"/api/v1/mappings/{fitted.pk}/activate/?project=acme",
            {"run": "r1", "reason": "x" * 5, "force": True},
            "application/json",
        )
        assert r.status_code == 409 and r.json()["run_grader"] == new and f"is graded by {new}" in r.json()["detail"]
        assert client.get(f"/api/v1/mappings/{fitted.pk}/?project=acme").json()["grader"] == old
        manual = client.post(
            "/api/v1/mappings/?project=acme", {"name": "by-hand", "bands": {"T1": 1, "T2": 0.7, "T3": 0.4}}, "application/json"
        )
        assert manual.status_code == 201 and manual.json()["grader"] == ""
        r = client.post(
            f"/api/v1/mappings/{manual.json()['id']}/activate/?project=acme", {"run": "r1", "reason": "x" * 5}, "application/json"
        )
        assert r.status_code == 201
    assert [a.mapping.name for a in MappingActivation.objects.all()] == ["by-hand"]
