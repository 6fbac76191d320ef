"""POST /api/v1/verdicts/ under hostile callers and bodies: who may post a verdict, which
posted verdicts the method reads, what one post may cost the web process, races between two
posts, and grader names that pass for a built-in one.

People (as in tests/conftest.py): alice admin of acme; tess a trainer (the operator's token);
fleet-bot, trainer-bot and rita-bot service accounts alice makes on the Team page.
"""

from __future__ import annotations

import json

import pytest

from grading.models import GraderVersion, Role, Verdict
from grading.projects.team import create_token
from grading.projects.tokens import issue_api_token
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.verdicts import post_verdict, verdict_body

MAX_EVIDENCE = 50  # citations a judgment may hold, as docs/api.md says


def body(**changes) -> dict:
    return verdict_body(second="T3", **changes)


post = post_verdict


def export(client, token: str) -> dict[int, tuple[float, float, str]]:
    """Step 1 of r1 as the trainer reads it: index -> (A, A*, status)."""
    r = client.get("/api/v1/advantages/?project=acme&run=r1&step=1", HTTP_AUTHORIZATION=f"Token {token}")
    assert r.status_code == 200, r.content[:300]
    rows = [json.loads(line) for line in r.content.splitlines()]
    return {row["index"]: (row["advantage"], row["redistributed_advantage"], row["status"]) for row in rows}


@pytest.fixture
def group(acme):
    ingest_groups(acme, small_group("t-1@1", rewards=(1, 0, 1)))


# --- who may post ------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Role.TRAINER, Role.REVIEWER, Role.AUDITOR, Role.ADJUDICATOR])
def test_a_service_account_without_the_grader_capability_gets_403_and_nothing_is_stored(client, group, acme, alice, role):
    # alice makes a service account of her project on the Team page with a role that does not grade:
    # its token exports (a trainer) or judges (a reviewer), and posting a verdict is none of that.
    _, secret = create_token(project=acme, username=f"{role}-bot", role=role, name="script", actor=alice)
    code, answer = post(client, secret, body())
    assert code == 403, answer
    assert not Verdict.objects.exists() and not GraderVersion.objects.exists()


@pytest.mark.django_db
def test_the_operators_trainer_and_reviewer_tokens_get_403(client, group, trainer_token):
    _, reviewer = issue_api_token(username="rita", project_name="acme", role=Role.REVIEWER)
    assert post(client, trainer_token, body())[0] == 403
    assert post(client, reviewer, body())[0] == 403
    assert not Verdict.objects.exists()


@pytest.mark.django_db
def test_a_grader_service_account_made_on_the_team_page_posts(client, group, acme, alice):
    # the Team page offers the grader role, and a new name with it makes a grader service account
    client.force_login(alice)
    page = client.get("/projects/acme/team/")
    assert page.status_code == 200 and b'<option value="grader"' in page.content
    client.logout()
    _, secret = create_token(project=acme, username="fleet-bot", role=Role.GRADER, name="fleet", actor=alice)
    code, answer = post(client, secret, body())
    assert code == 201 and answer["result"] == "stored", answer
    assert Verdict.objects.get().raw["external"]["posted_by"] == "fleet-bot (service account made by alice)"


@pytest.mark.django_db
def test_the_operators_command_makes_a_grader_token_that_posts(client, group):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("create_api_token", "fleet-bot", project="acme", role="grader", stdout=out)
    assert post(client, out.getvalue().strip(), body())[0] == 201


# --- which posted verdicts the method reads ------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_verdict_of_a_grader_the_runs_policy_does_not_name_leaves_the_advantages_alone(client, group, alice_token):
    before = export(client, alice_token)
    assert {i: status for i, (_, _, status) in before.items()} == {0: "fallback", 1: "fallback", 2: "fallback"}
    code, answer = post(client, alice_token, body())
    assert code == 201, answer
    # stored, and on the bench like any grader's, but the run names no such grader: A* stays A
    assert Verdict.objects.filter(grader="acme-fleet@3").exists()
    assert export(client, alice_token) == before


@pytest.mark.django_db(transaction=True)
def test_a_posted_verdict_moves_the_advantages_when_the_runs_jury_names_its_grader(client, group, acme, alice_token):
    from grading.jobs.policy import update_run_policy
    from grading.models import Run
    from grading.registry.juries import save_jury

    save_jury(project=acme, name="pair", members=["acme-fleet@3", "acme-fleet-b@1"], rule="agree_or_abstain")
    update_run_policy(run=Run.objects.get(name="r1"), changes={"jury": "pair"})
    before = export(client, alice_token)
    assert post(client, alice_token, body())[0] == 201
    assert post(client, alice_token, body(grader="acme-fleet-b@1"))[0] == 201
    after = export(client, alice_token)
    assert after[0][2] == "graded" and after[0][1] > before[0][1] and after[2][1] < before[2][1]


# --- what one post may cost ----------------------------------------------------------------


@pytest.fixture
def resolutions(monkeypatch):
    """Every citation the checks resolve, as (kind, rollout, locator), in order."""
    from grading.grader import evidence

    seen: list[tuple[str, int, str]] = []
    real = evidence.resolve

    def counting(workspace, item, **options):
        seen.append((item.kind, item.rollout, item.locator))
        return real(workspace, item, **options)

    monkeypatch.setattr(evidence, "resolve", counting)
    return seen


def cited(n: int, **changes) -> dict:
    """The verdict, rollout 2's judgment citing `n` distinct turns and log lines (all resolve)."""
    out = body(**changes)
    out["judgments"][1]["evidence"] = [
        {"kind": "test", "rollout": 2, "locator": "log:1", "note": f"note {i}"}
        if i % 2
        else {"kind": "turn", "rollout": 2, "locator": str(i % 2), "note": f"note {i}"}
        for i in range(n)
    ]
    return out


@pytest.mark.django_db
def test_more_citations_than_a_judgment_may_hold_is_a_400_naming_the_field_before_any_is_resolved(
    client, group, alice_token, resolutions
):
    code, answer = post(client, alice_token, cited(MAX_EVIDENCE + 1))
    assert code == 400 and answer["field"] == "judgments.evidence", answer
    assert str(MAX_EVIDENCE) in answer["detail"] and "rollout 2" in answer["detail"]
    assert resolutions == [] and not Verdict.objects.exists()
    # thousands, as a body under the size limit holds: refused the same way, nothing resolved
    assert post(client, alice_token, cited(2_000))[0] == 400 and resolutions == []
    # judgments within the cap that together cite more than a verdict may: refused the same way
    many = cited(MAX_EVIDENCE)
    many["judgments"] += [{**many["judgments"][1], "rollout": i} for i in range(3, 7)]
    code, answer = post(client, alice_token, many)
    assert code == 400 and answer["field"] == "judgments.evidence" and "verdict" in answer["detail"], answer
    assert resolutions == []
    # the most a judgment may hold is taken
    assert post(client, alice_token, cited(MAX_EVIDENCE))[0] == 201


@pytest.mark.django_db
def test_each_citation_is_resolved_once_and_a_repeated_verdict_resolves_none(client, group, alice_token, resolutions):
    data = cited(40)
    code, answer = post(client, alice_token, data)
    assert code == 201, answer
    # 40 citations on rollout 2 (turns 0 and log line 1 with different notes: two things cited)
    assert len(resolutions) <= 40 and len(set(resolutions)) == len(resolutions), resolutions
    resolutions.clear()
    # the same verdict again: unchanged, answered from the stored one without a citation resolved
    assert post(client, alice_token, data) == (200, {**answer, "result": "unchanged"})
    assert resolutions == []
    # a different one from the same version: 409 at once, nothing resolved either
    changed = cited(40)
    changed["judgments"][1]["tier"] = "T2"
    code, conflict = post(client, alice_token, changed)
    assert code == 409 and conflict["field"] == "grader" and resolutions == []
    assert Verdict.objects.count() == 1


@pytest.mark.django_db
def test_distinct_citations_are_each_resolved_exactly_once(client, group, alice_token, resolutions):
    data = body()
    data["judgments"][1]["evidence"] = [
        {"kind": "turn", "rollout": 2, "locator": "0", "note": "read first"},
        {"kind": "turn", "rollout": 2, "locator": "1", "note": "then ran"},
        {"kind": "test", "rollout": 2, "locator": "log:1", "note": "the log"},
        {"kind": "test", "rollout": 2, "locator": "t::a", "note": "the test"},
    ]
    data["judgments"][0]["evidence"] = [{"kind": "patch", "rollout": 0, "locator": "w.py:2", "note": "the fix"}]
    assert post(client, alice_token, data)[0] == 201
    assert sorted(resolutions) == sorted(
        [("turn", 2, "0"), ("turn", 2, "1"), ("test", 2, "log:1"), ("test", 2, "t::a"), ("patch", 0, "w.py:2")]
    )


# --- racing posts --------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_different_verdicts_raced_under_one_name_store_one_and_refuse_the_others(group, alice_token):
    # Before: each post looked for the grader's verdict, found none, and answered "stored" even
    # when another post's row was the one that landed (or failed on the unique row with a 500).
    import threading

    from django.db import connection
    from django.test import Client

    if connection.vendor == "sqlite":
        pytest.skip("SQLite's in-memory test database is one connection; the threads need PostgreSQL")
    tiers = ("T1", "T2", "T3")
    for round_ in range(1, 4):
        grader = f"acme-fleet@{round_}"
        ready = threading.Barrier(len(tiers))
        answers: dict[str, tuple[int, dict]] = {}

        def attempt(tier, grader=grader, ready=ready, answers=answers):
            data = body(grader=grader)
            data["judgments"][1]["tier"] = tier  # each thread a different verdict of rollout 2
            client = Client()
            ready.wait()
            try:
                answers[tier] = post(client, alice_token, data)
            finally:
                connection.close()

        threads = [threading.Thread(target=attempt, args=(tier,)) for tier in tiers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(code for code, _ in answers.values())
        assert codes == [201, 409, 409], answers
        (stored,) = [tier for tier, (code, _) in answers.items() if code == 201]
        # the one answered "stored" is the row in the database, and it is the only one
        verdict = Verdict.objects.get(grader=grader)
        assert verdict.grades.get(rollout__index=2).tier == stored
        assert all(answer["field"] == "grader" for code, answer in answers.values() if code == 409)


# --- grader names --------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["a" * 81 + "@1", "a" * 97 + "@1", "fleet@" + "9" * 41])
def test_a_grader_name_longer_than_is_stored_is_a_400_naming_the_field(client, group, alice_token, name):
    # Before: a name of at most 100 characters passed the check, and a label over the 80 the
    # grader's row holds (or a version over 40) failed to insert on PostgreSQL: a 500.
    code, answer = post(client, alice_token, body(grader=name))
    assert code == 400 and answer["field"] == "grader", answer
    assert "80" in answer["detail"] and "40" in answer["detail"]
    assert not Verdict.objects.exists() and not GraderVersion.objects.exists()


@pytest.mark.django_db
def test_the_longest_grader_name_that_is_stored_is_taken(client, group, alice_token):
    name = "a" * 80 + "@" + "9" * 19  # 100 characters: the whole of Verdict.grader
    assert post(client, alice_token, body(grader=name))[0] == 201
    assert GraderVersion.objects.get().grader.name == "a" * 80


# The built-in grader's and the juries' names, passed off by case, a suffix, a look-alike letter
# (Cyrillic е, U+0435) or full-width letters that NFKC folds to ASCII.
SPOOFED_LABELS = [
    "Heuristic",
    "HEURISTIC",
    "h\u0435uristic",
    "heuristic-v2",
    "heuristic.",
    "\uff48\uff45\uff55\uff52\uff49\uff53\uff54\uff49\uff43",
    "JURY:x",
    "Jury:pair",
    "LLM:gpt",
    "llm\uff1agpt",
]


@pytest.mark.django_db
@pytest.mark.parametrize("label", SPOOFED_LABELS)
def test_a_posted_verdict_under_a_spoofed_reserved_name_is_refused(client, group, alice_token, label):
    code, answer = post(client, alice_token, body(grader=f"{label}@1"))
    assert code == 400 and answer["field"] == "grader", answer
    assert not Verdict.objects.exists() and not GraderVersion.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("label", SPOOFED_LABELS)
def test_a_grader_defined_under_a_spoofed_reserved_name_is_refused(client, acme, alice_token, label, settings):
    settings.GRADER_ENDPOINT_ENVS = {"JUDGE_URL": "JUDGE_KEY"}
    definition = {"name": label, "model": "m", "endpoint_env": "JUDGE_URL", "api_key_env": "JUDGE_KEY"}
    r = client.post(
        "/api/v1/graders/?project=acme",
        json.dumps(definition),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {alice_token}",
    )
    assert r.status_code == 400 and r.json()["field"] == "name", r.content
    assert not GraderVersion.objects.exists()


@pytest.mark.django_db
def test_names_that_only_resemble_no_reserved_one_are_taken(client, group, acme, alice_token, settings):
    # an honest team's names stay usable: "llm" or "jury" inside a name is not a built-in's
    for name in ("acme-fleet@3", "fleet.v2@2026-11", "my-llm-judge@1", "jury_of_one@1"):
        assert post(client, alice_token, body(grader=name))[0] == 201, name
    settings.GRADER_ENDPOINT_ENVS = {"JUDGE_URL": "JUDGE_KEY"}
    definition = {"name": "judge-heuristics", "model": "m", "endpoint_env": "JUDGE_URL", "api_key_env": "JUDGE_KEY"}
    r = client.post(
        "/api/v1/graders/?project=acme",
        json.dumps(definition),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {alice_token}",
    )
    assert r.status_code == 201, r.content
