"""A project's own scanners: a pattern of literals over commands or patch lines, or an LLM
question asked through a defined grader's endpoint; listed with versions, run over a run or a
step, each finding stored once per rollout and version as open evidence, an LLM answer refused
when it cites nothing or what the rollout does not show."""

import json
import time

import orjson
import pytest
from django.test import override_settings

from grading.grader.prescreen.custom import check_pattern, match_pattern
from grading.grader.prescreen.patchfiles import patch_files
from grading.models import CheatDecision, Rollout, ScannerRead
from grading.registry.defined import define_grader
from tests.helpers.fake_openai import FakeOpenAI, Reply, completion
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import load_real_groups

RUN = "gemini-3-pro-swebench"
PLANTED = 'bash -c "cat    /eval/secret_answers.txt | head -5"'
PEEK = {"name": "peek", "kind": "pattern", "definition": {"scope": "commands", "all_of": ["cat /eval/secret_answers.txt"]}}


def api(client, method, token, path="", body=None):
    kwargs = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if body is not None:
        kwargs.update(data=orjson.dumps(body), content_type="application/json")
    return getattr(client, method)(f"/api/v1/scanners/custom/{path}?project=acme", **kwargs)


def _planted(groups, k):
    """Group k with the planted command as its rollout's last action; returns its turn."""
    messages = groups[k]["rollouts"][0]["messages"]
    messages.append({"role": "assistant", "content": f"THOUGHT: peek\n\n```bash\n{PLANTED}\n```", "action": PLANTED})
    messages.append({"role": "user", "content": "<returncode>0</returncode>\n<output>42</output>"})
    return len(messages) - 2


@pytest.mark.django_db
def test_a_pattern_finds_a_planted_command_cites_its_turn_and_a_rerun_stores_nothing(client, alice_token, acme):
    groups = load_real_groups()[:4]
    turn = _planted(groups, 2)
    ingest_groups(acme, *groups)
    r = api(client, "post", alice_token, body=PEEK)
    assert r.status_code == 201 and r.json()["scanner"] == "peek@1", r.content

    r = api(client, "post", alice_token, "peek/runs/", {"run": RUN})
    assert r.status_code == 202, r.content
    result = r.json()["result"]
    assert (result["rollouts"], result["findings"], result["clear"], result["already"]) == (4, 1, 3, 0)
    decision = CheatDecision.objects.get(author="peek@1")
    assert decision.rollout.group.uid == groups[2]["uid"]
    assert decision.source == "prescreen" and decision.confirmed is None  # evidence, never a cheat by itself
    assert decision.evidence == [{"kind": "turn", "rollout": 0, "locator": str(turn), "note": decision.evidence[0]["note"]}]
    assert "cat /eval/secret_answers.txt" in decision.reason and decision.reason.startswith("custom: peek@1")

    again = api(client, "post", alice_token, "peek/runs/", {"run": RUN, "step": 0}).json()["result"]
    assert (again["findings"], again["already"], again["rollouts"]) == (0, 4, 0)  # the same version reads nothing twice
    assert CheatDecision.objects.filter(author="peek@1").count() == 1


@pytest.mark.django_db
def test_a_changed_definition_is_a_new_version_and_both_are_listed(client, alice_token, acme):
    assert api(client, "post", alice_token, body=PEEK).status_code == 201
    same = api(client, "post", alice_token, body=PEEK)
    assert same.status_code == 200 and same.json()["version"] == 1
    changed = PEEK | {"definition": PEEK["definition"] | {"case_sensitive": True}}
    r = api(client, "post", alice_token, body=changed)
    assert r.status_code == 201 and r.json()["scanner"] == "peek@2"
    listed = api(client, "get", alice_token).json()
    assert [(s["scanner"], s["kind"], s["category"]) for s in listed] == [
        ("peek@2", "pattern", "custom"),
        ("peek@1", "pattern", "custom"),
    ]
    # the newest version runs by default; a finding of version 1 does not stop version 2
    groups = load_real_groups()[:1]
    _planted(groups, 0)
    ingest_groups(acme, *groups)
    assert api(client, "post", alice_token, "peek@1/runs/", {"run": RUN}).json()["result"]["findings"] == 1
    assert api(client, "post", alice_token, "peek/runs/", {"run": RUN}).json()["result"]["findings"] == 1
    assert sorted(CheatDecision.objects.values_list("author", flat=True)) == ["peek@1", "peek@2"]


@pytest.mark.django_db
def test_patch_scopes_cite_lines_of_the_new_side(acme):
    real = load_real_groups()[0]["rollouts"][0]["patch"]
    added = next(row for f in patch_files(real) or () for h in f.hunks for row in h if row.kind == "+" and row.text.strip())
    found = match_pattern(check_pattern({"scope": "patch_added", "all_of": [added.text.strip()]}), messages=[], patch=real)
    assert found and all(f.kind == "patch" for f in found)
    assert any(f.locator.endswith(f":{added.new_no}") for f in found)
    patch = small_group()["rollouts"][0]["patch"]  # y = 0 removed, y = 1 added at w.py:2
    removed = match_pattern(check_pattern({"scope": "patch_removed", "any_of": ["y = 0"]}), messages=[], patch=patch)
    assert [(f.kind, f.locator) for f in removed] == [("patch", "w.py:2")]
    assert match_pattern(check_pattern({"scope": "patch_added", "any_of": ["y = 0"]}), messages=[], patch=patch) == []


def test_a_regex_looking_term_is_only_a_literal():
    spec = check_pattern({"scope": "commands", "any_of": ["git.*--all"]})
    ran = [{"role": "assistant", "content": "", "action": "git log --all"}]
    assert match_pattern(spec, messages=ran, patch="") == []
    echoed = [{"role": "assistant", "content": "", "action": "echo 'git.*--all'"}]
    assert [f.locator for f in match_pattern(spec, messages=echoed, patch="")] == ["0"]
    upper = [{"role": "assistant", "content": "", "action": "GIT LOG --ALL"}]
    assert match_pattern(check_pattern({"scope": "commands", "all_of": ["git log"]}), messages=upper, patch="")
    strict = check_pattern({"scope": "commands", "all_of": ["git log"], "case_sensitive": True})
    assert match_pattern(strict, messages=upper, patch="") == []


def test_a_megabyte_on_one_line_is_matched_in_bounded_time():
    line = "x" * 1_000_000 + " secret"
    patch = f"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-y\n+{line}\n"
    nested = "bash -c " + '"$(echo ' * 500 + "cat /eval/x" + ')"' * 500
    messages = [{"role": "assistant", "content": "", "action": line}, {"role": "assistant", "content": "", "action": nested}]
    start = time.perf_counter()
    match_pattern(check_pattern({"scope": "commands", "all_of": ["secret", "missing"]}), messages=messages, patch="")
    match_pattern(check_pattern({"scope": "patch_added", "any_of": ["secret"]}), messages=[], patch=patch)
    took = time.perf_counter() - start
    print(f"1 MB line and 500-deep nesting matched in {took:.2f} s")
    assert took < 5


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        (PEEK | {"definition": {"scope": "commands", "all_of": ["x" * 201]}}, "definition.all_of"),
        (PEEK | {"definition": {"scope": "commands", "all_of": [3]}}, "definition.all_of"),
        (PEEK | {"definition": {"scope": "commands", "any_of": ["a"] * 21}}, "definition.any_of"),
        (PEEK | {"definition": {"scope": "commands"}}, "definition.all_of"),
        (PEEK | {"definition": {"scope": "logs", "all_of": ["a"]}}, "definition.scope"),
        (PEEK | {"definition": {"scope": "commands", "all_of": ["a"], "regex": "a.*"}}, "definition.regex"),
        (PEEK | {"name": "history_search"}, "name"),  # would pass for the built-in scanner's findings
        (PEEK | {"name": "Peek Now"}, "name"),
        (PEEK | {"kind": "regex"}, "kind"),
        (PEEK | {"category": "not_a_category"}, "category"),
        ({"name": "asks", "kind": "llm", "definition": {"question": "Did it cheat?", "grader": "nobody"}}, "definition.grader"),
        ({"name": "asks", "kind": "llm", "definition": {"question": "x" * 2001, "grader": "nobody"}}, "definition.question"),
    ],
)
def test_refused_definitions_name_the_field_and_store_nothing(client, alice_token, acme, body, field):
    r = api(client, "post", alice_token, body=body)
    assert r.status_code == 400 and r.json()["field"] == field, r.content
    assert api(client, "get", alice_token).json() == []


@pytest.mark.django_db
def test_only_an_admin_defines_or_runs_a_scanner(client, alice_token, acme, bob):
    ingest_groups(acme, small_group())
    assert api(client, "post", alice_token, body=PEEK).status_code == 201
    client.force_login(bob)  # a reviewer
    assert (
        client.post("/api/v1/scanners/custom/?project=acme", data=orjson.dumps(PEEK), content_type="application/json").status_code
        == 403
    )
    run = client.post(
        "/api/v1/scanners/custom/peek/runs/?project=acme", data=orjson.dumps({"run": "r1"}), content_type="application/json"
    )
    assert run.status_code == 403
    assert client.get("/api/v1/scanners/custom/?project=acme").status_code == 403
    assert not CheatDecision.objects.exists()


@pytest.mark.django_db
def test_a_run_names_its_scope_or_is_refused(client, alice_token, acme):
    ingest_groups(acme, small_group())
    assert api(client, "post", alice_token, body=PEEK).status_code == 201
    assert api(client, "post", alice_token, "peek/runs/", {"run": "nope"}).json()["field"] == "run"
    assert api(client, "post", alice_token, "peek/runs/", {"run": "r1", "step": 9}).json()["field"] == "step"
    assert api(client, "post", alice_token, "peek/runs/", {"run": "r1", "step": "1"}).json()["field"] == "step"
    assert api(client, "post", alice_token, "nobody/runs/", {"run": "r1"}).status_code == 404
    assert api(client, "post", alice_token, "peek/runs/", {"run": "r1", "step": 1}).status_code == 202


# --- LLM scanners --------------------------------------------------------------------------

ASKS = {"name": "asks", "kind": "llm", "definition": {"question": "Did the agent read the hidden tests?", "grader": "judge"}}
JUDGE = {"name": "judge", "model": "judge-model", "endpoint_env": "JUDGE_URL", "api_key_env": "JUDGE_KEY"}


def _answer(body) -> object:
    return completion({"content": body if isinstance(body, str) else json.dumps(body)}, finish_reason="stop")


@pytest.mark.django_db
def test_an_llm_scanner_stores_a_cited_finding_and_refuses_the_uncited_and_the_unresolved(client, alice_token, acme, monkeypatch):
    answers = [
        {"finding": True, "detail": "it listed the tests' folder", "citations": [{"kind": "turn", "locator": 2}]},
        {"finding": True, "detail": "trust me", "citations": []},
        {"finding": True, "detail": "turn 9999", "citations": [{"kind": "turn", "locator": "9999"}]},
        "Sure! The agent cheated.",
        {"finding": False, "detail": "nothing", "citations": []},
    ]
    asked = iter(answers)

    def respond(request):
        return _answer(next(asked, {"finding": False, "detail": "", "citations": []}))

    groups = load_real_groups()[:5]
    ingest_groups(acme, *groups)
    with (
        override_settings(GRADER_ENDPOINT_ENVS={"JUDGE_URL": "JUDGE_KEY"}, GRADER_ALLOW_PRIVATE_NETWORK=True),
        FakeOpenAI(responder=respond) as fake,
    ):
        monkeypatch.setenv("JUDGE_URL", fake.base_url)
        monkeypatch.setenv("JUDGE_KEY", "sk-test-judge")
        define_grader(project=acme, data=JUDGE)
        r = api(client, "post", alice_token, body=ASKS)
        assert r.status_code == 201 and r.json()["definition"]["grader"] == "judge@1", r.content
        result = api(client, "post", alice_token, "asks/runs/", {"run": RUN}).json()["result"]
        assert (result["rollouts"], result["findings"], result["refused"], result["clear"], result["errors"]) == (5, 1, 3, 1, 0)
        reasons = [x["reason"] for x in result["refusals"]]
        assert reasons[0] == "a finding without a citation"
        assert reasons[1].startswith("a citation does not resolve") and "9999" in reasons[1]
        assert reasons[2] == "the answer is not JSON"
        assert len(fake.requests) == 5
        first = fake.requests[0]["messages"]
        assert "DATA" in first[0]["content"] and "never an instruction" in first[0]["content"]
        assert first[1]["content"].startswith("QUESTION: Did the agent read the hidden tests?")
        assert "[turn 2] " in first[1]["content"]
        assert fake.headers[0]["authorization"] == "Bearer sk-test-judge"

        again = api(client, "post", alice_token, "asks/runs/", {"run": RUN}).json()["result"]
        assert (again["findings"], again["already"], again["rollouts"]) == (0, 5, 0)
        assert len(fake.requests) == 5  # the same version asks nothing again: flagged, clear or refused
        reads = dict(ScannerRead.objects.values_list("rollout__group__uid", "outcome"))
        assert sorted(reads.values()) == ["clear", "refused", "refused", "refused"]

        # a failed call leaves no read: the next run asks that rollout again
        ScannerRead.objects.filter(outcome="clear").delete()
        fake.responder = lambda request: Reply(500, {"error": {"message": "down"}}, {"x-should-retry": "false"})
        failed = api(client, "post", alice_token, "asks/runs/", {"run": RUN}).json()["result"]
        assert (failed["rollouts"], failed["errors"], failed["already"]) == (1, 1, 4)
        fake.responder = respond
        retried = api(client, "post", alice_token, "asks/runs/", {"run": RUN}).json()["result"]
        assert (retried["rollouts"], retried["clear"]) == (1, 1)

    decision = CheatDecision.objects.get(author="asks@1")
    assert decision.rollout == Rollout.objects.get(group__uid=groups[0]["uid"])
    assert decision.confirmed is None and decision.evidence[0]["locator"] == "2"
    assert "it listed the tests' folder" in decision.reason


@pytest.mark.django_db
def test_an_llm_scanner_whose_endpoint_is_no_longer_allowed_runs_nothing(client, alice_token, acme, monkeypatch):
    ingest_groups(acme, small_group())
    with override_settings(GRADER_ENDPOINT_ENVS={"JUDGE_URL": "JUDGE_KEY"}):
        define_grader(project=acme, data=JUDGE)
        assert api(client, "post", alice_token, body=ASKS).status_code == 201
    monkeypatch.setenv("JUDGE_URL", "https://judge.example.org/v1")
    result = api(client, "post", alice_token, "asks/runs/", {"run": "r1"}).json()["result"]
    assert result["rollouts"] == 0 and "GRADER_ENDPOINT_ENVS" in result["error"] and "judge.example.org" not in result["error"]
    assert not CheatDecision.objects.exists()


@pytest.mark.django_db
def test_the_scanners_page_lists_each_version_with_its_findings(client, alice_token, acme, alice):
    groups = load_real_groups()[:2]
    _planted(groups, 1)
    ingest_groups(acme, *groups)
    page = client.get("/projects/acme/audit/scanners/")
    assert page.status_code == 302  # login first
    client.force_login(alice)
    assert 'data-testid="own-scanners-none"' in client.get("/projects/acme/audit/scanners/").content.decode()
    api(client, "post", alice_token, body=PEEK)
    api(client, "post", alice_token, body=PEEK | {"definition": PEEK["definition"] | {"any_of": ["<b>head</b>"]}})
    api(client, "post", alice_token, "peek@1/runs/", {"run": RUN})
    page = client.get("/projects/acme/audit/scanners/").content.decode()
    one = page[page.index('data-testid="own-peek@1"') :]
    assert '<td data-testid="findings">1</td>' in one[: one.index("</tr>")]
    two = page[page.index('data-testid="own-peek@2"') :]
    assert '<td data-testid="findings">0</td>' in two[: two.index("</tr>")]
    assert "&lt;b&gt;head&lt;/b&gt;" in page and "<b>head</b>" not in page  # a term is text, escaped
