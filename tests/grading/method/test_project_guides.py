"""The rubric guide per project: its page (everyone reads, admins edit or reset), what the
database holds, and the LLM grader's prompt carrying the project's edited text (the real
openai client against the local fake server, tests/helpers/fake_openai.py)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from grading.grader.llm import SYSTEM_PROMPT, system_prompt
from grading.jobs.grade import grade_group
from grading.method.guide import DEFAULT_DIMENSIONS, DEFAULT_GUIDE, MAX_TIER_CHARS, guide_from_fields
from grading.method.project_guides import guide_for
from grading.method.tiers import TIER_DESCRIPTIONS, TIERS
from grading.models import GraderVersion, Group, RubricGuide, Verdict
from tests.helpers.fake_openai import FakeOpenAI, scripted_model
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db

URL = "/projects/acme/guide/"
EDITED_T1 = "T1-EDITED: would be merged as is by the maintainers"
EDITED_MINIMALITY = "MINIMALITY-EDITED: touches no file the fix does not need"


def form(**changes) -> dict:
    data = {f"tier-{t}": TIER_DESCRIPTIONS[t] for t in TIERS}
    for d in DEFAULT_DIMENSIONS.values():
        data[f"meaning-{d.name}"], data[f"example-{d.name}"] = d.meaning, d.example
    data.update(changes)
    return data


def edit(client, alice, **changes):
    client.force_login(alice)
    return client.post(URL, form(**{"tier-T1": EDITED_T1, "meaning-minimality": EDITED_MINIMALITY, **changes}))


def test_the_defaults_are_the_methods_text(acme):
    assert guide_for(acme) == DEFAULT_GUIDE
    assert {t: DEFAULT_GUIDE.tier(t) for t in TIERS} == TIER_DESCRIPTIONS
    assert [d.name for d in DEFAULT_GUIDE.dimensions] == list(DEFAULT_DIMENSIONS)
    assert system_prompt() == SYSTEM_PROMPT
    for t in TIERS:
        assert f"{t} = {TIER_DESCRIPTIONS[t]}" in SYSTEM_PROMPT
    for d in DEFAULT_DIMENSIONS.values():
        assert d.meaning in SYSTEM_PROMPT and d.example in SYSTEM_PROMPT


def test_an_admin_edits_the_guide_and_the_row_holds_it(client, acme, alice):
    r = edit(client, alice)
    assert r.status_code == 302
    row = RubricGuide.objects.get(project=acme)
    assert row.tiers["T1"] == EDITED_T1 and row.tiers["T2"] == TIER_DESCRIPTIONS["T2"]
    assert row.dimensions["minimality"]["meaning"] == EDITED_MINIMALITY
    assert row.dimensions["minimality"]["example"] == DEFAULT_DIMENSIONS["minimality"].example
    assert row.updated_by == alice
    guide = guide_for(acme)
    assert guide.tier("T1") == EDITED_T1 and guide.dimension("minimality").meaning == EDITED_MINIMALITY
    page = client.get(URL).content.decode()
    assert EDITED_T1 in page and "Edited by alice" in page
    assert client.post(URL, {"action": "reset"}).status_code == 302
    assert not RubricGuide.objects.exists() and guide_for(acme) == DEFAULT_GUIDE


def test_a_bad_edit_names_the_field_and_stores_nothing(client, acme, alice):
    edit(client, alice)
    r = edit(client, alice, **{"tier-T2": "   ", "example-solution_fit": "x" * (MAX_TIER_CHARS + 1)})
    assert r.status_code == 422
    page = r.content.decode()
    assert "tier-T2" in page and "must not be empty" in page and "example-solution_fit" in page and "at most 600" in page
    row = RubricGuide.objects.get(project=acme)
    assert row.tiers["T2"] == TIER_DESCRIPTIONS["T2"]  # the earlier edit, untouched
    with pytest.raises(ValueError):
        guide_from_fields(form(**{"tier-T3": ""}))


def test_members_read_it_and_only_admins_edit_it(client, acme, alice, bob, carol):
    edit(client, alice)
    client.force_login(bob)  # a reviewer
    page = client.get(URL).content.decode()
    assert EDITED_T1 in page and EDITED_MINIMALITY in page and "Save guide" not in page
    assert client.post(URL, form(**{"tier-T1": "bob's"})).status_code == 403
    assert RubricGuide.objects.get(project=acme).tiers["T1"] == EDITED_T1
    client.force_login(carol)  # not a member
    assert client.get(URL).status_code == 404


@pytest.mark.django_db(transaction=True)
def test_the_llm_graders_prompt_carries_the_projects_edited_guide(client, acme, alice):
    ingest_groups(acme, small_group("g@1", rewards=(1, 0, 1)))
    edit(client, alice)
    group = Group.objects.get(uid="g@1")
    with (
        FakeOpenAI(responder=scripted_model(2)) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True),
    ):
        verdict = grade_group(group_id=group.pk, backend="llm")
    assert verdict.status == Verdict.Status.VALID
    assert fake.requests, "the grader made no request"
    for request in fake.requests:
        system = request["messages"][0]
        assert system["role"] == "system"
        assert f"T1 = {EDITED_T1}" in system["content"] and EDITED_MINIMALITY in system["content"]
        assert TIER_DESCRIPTIONS["T1"] not in system["content"]


@pytest.mark.django_db(transaction=True)
def test_editing_the_guide_makes_a_new_llm_grader_version_and_calibration_fits_each_apart(client, acme, alice, bob):
    from reviews.selectors.calibration import fitted_mapping, judgment_frames
    from tests.factories import make_judgment

    ingest_groups(acme, small_group("g@1", rewards=(1, 0, 1)))
    group = Group.objects.get(uid="g@1")
    with (
        FakeOpenAI(responder=scripted_model(1)) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True),
    ):
        before = grade_group(group_id=group.pk, backend="llm")
        edit(client, alice)
        after = grade_group(group_id=group.pk, backend="llm")
        again = grade_group(group_id=group.pk, backend="llm")  # the same guide: the same version, no new call
    assert before.grader == "llm:fake-model@1"  # the default guide keeps the existing name
    assert after.grader.startswith("llm:fake-model@1.g") and len(after.grader) == len("llm:fake-model@1.g") + 8
    assert again.pk == after.pk and before.status == after.status == Verdict.Status.VALID
    versions = GraderVersion.objects.filter(project=acme).order_by("id")
    assert [v.name for v in versions] == [before.grader, after.grader]
    assert {v.grader.name for v in versions} == {"llm:fake-model"}
    assert versions[0].guide_version == "" and versions[1].guide_version == after.grader.rsplit(".", 1)[1]
    assert versions[1].guide["tiers"]["T1"] == EDITED_T1 and versions[1].endpoint_env == "GRADER_BASE_URL"

    make_judgment(group, bob, tiers={0: "T2", 2: "T1"})
    for name in (before.grader, after.grader):
        frames = judgment_frames(project=acme, grader=name)
        assert frames.graders == [name]  # one version's rows, never both
        machine = frames.frame[frames.frame["rater"] != "bob"]
        assert set(machine["grader"]) == {name} and len(machine) == 2
        assert fitted_mapping(frames.frame, n_boot=10).n_judgments == 2
