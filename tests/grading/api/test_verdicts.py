"""POST /api/v1/verdicts/: an external grader's verdict, checked as the LLM grader's is, stored
all or nothing; the same one again is unchanged, a different one a conflict."""

from __future__ import annotations

import pytest

from grading.models import CheatDecision, Grader, GraderVersion, Role, RolloutGrade, Verdict
from grading.projects.team import create_token
from grading.projects.tokens import issue_api_token
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.verdicts import post_verdict, verdict_body

pytestmark = pytest.mark.django_db


def body(**changes) -> dict:
    return verdict_body(second="T2", **changes)


post = post_verdict


@pytest.fixture
def group(acme):
    ingest_groups(acme, small_group("t-1@1", rewards=(1, 0, 1)))


def test_an_admin_posts_a_verdict_stored_as_any_graders_and_again_it_is_unchanged(client, group, alice_token):
    code, answer = post(client, alice_token, body())
    assert code == 201 and answer == {
        "result": "stored",
        "grader": "acme-fleet@3",
        "uid": "t-1@1",
        "status": "valid",
        "uncited": [],
    }
    verdict = Verdict.objects.get(grader="acme-fleet@3")
    grades = {g.rollout.index: (g.tier, g.rank) for g in RolloutGrade.objects.filter(verdict=verdict).select_related("rollout")}
    assert grades == {0: ("T1", 1), 2: ("T2", 2)} and verdict.group.has_valid_verdict
    version = GraderVersion.objects.get(name="acme-fleet@3")
    assert version.version == "3" and version.grader.backend == Grader.Backend.EXTERNAL
    assert verdict.raw["external"]["posted_by"] == "alice"
    # the same verdict, its judgments in another order: unchanged, nothing more stored
    again = body()
    again["judgments"] = list(reversed(again["judgments"]))
    assert post(client, alice_token, again) == (200, {**answer, "result": "unchanged"})
    assert Verdict.objects.count() == 1 and RolloutGrade.objects.count() == 2
    # a different verdict from the same version: a conflict; a new version is a new grader
    changed = body()
    changed["judgments"][1]["tier"] = "T3"
    code, answer = post(client, alice_token, changed)
    assert code == 409 and answer["field"] == "grader"
    assert RolloutGrade.objects.get(verdict=verdict, rollout__index=2).tier == "T2"
    assert post(client, alice_token, {**changed, "grader": "acme-fleet@4"})[0] == 201
    assert sorted(Verdict.objects.values_list("grader", flat=True)) == ["acme-fleet@3", "acme-fleet@4"]
    assert GraderVersion.objects.filter(grader__name="acme-fleet").count() == 2


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"grader": "no-version"}, "grader", "name@version"),
        ({"grader": "heuristic@9"}, "grader", "built-in"),
        ({"grader": "jury:panel@1"}, "grader", "built-in"),
        ({"step": "1"}, "step", "whole number"),
        ({"run": ""}, "run", "non-empty"),
        ({"colour": "red"}, "colour", "unknown field"),
        ({"judgments": "T1"}, "judgments", "list of objects"),
        ({"uid": "nope@1"}, "uid", "no group"),
    ],
)
def test_bad_input_names_the_field_and_stores_nothing(client, group, alice_token, change, field, says):
    code, answer = post(client, alice_token, body(**change))
    assert code in (400, 404) and answer["field"] == field and says in answer["detail"]
    assert not Verdict.objects.exists() and not GraderVersion.objects.exists()


def test_the_verdict_is_checked_as_the_llm_graders_is(client, group, alice_token):
    missing = body()
    del missing["judgments"][0]["scores"]["minimality"]
    code, answer = post(client, alice_token, missing)
    assert code == 400 and answer["field"] == "judgments" and any("minimality" in e for e in answer["errors"])
    failing = body()
    failing["judgments"][0]["rollout"] = 1  # rollout 1 did not pass
    code, answer = post(client, alice_token, failing)
    assert code == 400 and any("did not pass" in e for e in answer["errors"]), answer
    assert not Verdict.objects.exists() and not CheatDecision.objects.exists()


def test_a_citation_given_must_resolve_and_the_refusal_names_where_it_is(client, group, alice_token):
    unresolved = body()
    unresolved["judgments"][1]["evidence"].append({"kind": "patch", "rollout": 2, "locator": "nowhere.py:999", "note": "x"})
    code, answer = post(client, alice_token, unresolved)
    assert code == 400 and answer["field"] == "judgments[1].evidence[1]"
    assert answer["errors"] == ["rollout 2: citation patch 'nowhere.py:999': rollout 2's patch does not touch 'nowhere.py'"]
    # a T1 may cite too, and what it cites must resolve as well
    cited_t1 = body()
    cited_t1["judgments"][0]["evidence"] = [{"kind": "turn", "rollout": 0, "locator": "7", "note": "x"}]
    code, answer = post(client, alice_token, cited_t1)
    assert code == 400 and answer["field"] == "judgments[0].evidence[0]" and "has no turn '7'" in answer["errors"][0]
    assert not Verdict.objects.exists() and not GraderVersion.objects.exists()


@pytest.mark.parametrize("evidence", ["absent", "empty"])
def test_a_negative_judgment_without_citations_is_stored_marked_uncited(client, group, alice_token, evidence):
    uncited = body()
    uncited["judgments"][0]["cheat"] = True  # a cheat flag without a citation
    if evidence == "absent":
        del uncited["judgments"][1]["evidence"]
    else:
        uncited["judgments"][1]["evidence"] = []
    code, answer = post(client, alice_token, uncited)
    assert code == 201 and answer["result"] == "stored" and answer["uncited"] == [0, 2]
    grades = RolloutGrade.objects.filter(verdict__grader="acme-fleet@3").order_by("rollout__index")
    assert [(g.rollout.index, g.tier, g.cheat, g.evidence, g.uncited) for g in grades] == [
        (0, "T1", True, [], True),
        (2, "T2", False, [], True),
    ]
    # its cheat flag goes to the audit like any grader's, saying whose it is
    assert CheatDecision.objects.get().author == "acme-fleet@3"
    # the same again is unchanged and says the same
    assert post(client, alice_token, uncited) == (200, {**answer, "result": "unchanged"})


def test_a_cited_negative_and_an_unsaid_t1_are_not_uncited(client, group, alice_token):
    code, answer = post(client, alice_token, verdict_body(second="T3"))
    assert code == 201 and answer["uncited"] == []
    assert not RolloutGrade.objects.filter(uncited=True).exists()


def test_a_grader_service_account_may_post_and_a_trainer_or_reviewer_may_not(client, group, acme, alice, trainer_token):
    _, bot_secret = create_token(project=acme, username="fleet-bot", role=Role.GRADER, name="fleet", actor=alice)
    _, trainer_bot = create_token(project=acme, username="trainer-bot", role=Role.TRAINER, name="train", actor=alice)
    assert post(client, trainer_token, body())[0] == 403
    assert post(client, trainer_bot, body())[0] == 403  # a service account, but one that only exports
    _, reviewer = issue_api_token(username="rita", project_name="acme", role=Role.REVIEWER)
    assert post(client, reviewer, body())[0] == 403
    assert not Verdict.objects.exists()
    assert post(client, bot_secret, body())[0] == 201
    assert Verdict.objects.get().raw["external"]["posted_by"] == "fleet-bot (service account made by alice)"
