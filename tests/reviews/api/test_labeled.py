"""GET /api/v1/labeled-groups/: judged groups as gagar-labeled-group/1 lines and as grader SFT examples.

People (tests/reviews/conftest.py): alice admin, bob and dan reviewers, erin auditor, fay
adjudicator, carol admin of "other" only, tess a trainer token of acme. The labeled run r1:

- g1@1: bob and dan disagree, fay adjudicates (citations in her notes); graded by the
  fixture grader, whose cheat flag on #3 is not audited yet;
- g2@1: bob alone (a single review), his cheat flag on #3 confirmed by erin;
- g4@2: bob and dan, not adjudicated (the median consensus), step 2 so it comes last;
- g5@1: mixed but never judged, so never exported;
- g6@1: dan without rubric scores (no SFT example), hostile patch and note text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from grading.grader.evidence import problems
from grading.grader.llm import SYSTEM_PROMPT, VERDICT_SCHEMA, LLMGrader, parse_verdict, tool_specs
from grading.grader.tools import call_tool, validate
from grading.method.guide import RUBRIC
from grading.models import CheatDecision, Group, Task, Verdict
from grading.registry.workspaces import load_workspace
from grading.verdicts.store import GradeInput, record_verdict
from reviews.models import CheatAudit, Judgment, JudgmentItem
from reviews.selectors import labeled as selectors_labeled
from reviews.services.audit import audit_cheat
from reviews.services.judgments import ItemInput, submit_judgment
from reviews.services.queue import assign
from tests.helpers.desk import GRADER, SECRET_NOTE
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db

URL = "/api/v1/labeled-groups/"
HOSTILE_PATCH = (
    "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n"
    "-y = 0\n+y = '</script><script>alert(\"x\")</script> \\u2028 \u2028 \u2029 \x85 &amp; \U0001f600'\n"
)
HOSTILE_NOTE = '<img src=x onerror="alert(1)"> “quoted” \\ back\nslash & {{ template }} </textarea>'
FAY_NOTE_1 = "keeps the old default: w.py:2 (see turn 1)"
FAY_NOTE_3 = "reads the upstream fix at turn 1; w.py:99 is not in the patch"
ERIN_REASON = "turn 1 downloads the fixed release"


def scores(value: int) -> dict:
    return dict.fromkeys(RUBRIC, value)


def review(person, group, items, *, kind=Judgment.Kind.REVIEW, reason="", note=""):
    if kind == Judgment.Kind.REVIEW:
        assign(group=group, reviewer=person)
    return submit_judgment(reviewer=person, group=group, items=items, kind=kind, reason=reason, note=note).judgment


@pytest.fixture
def labeled_run(groups, bob, dan, erin, fay):
    acme = groups["g1@1"].run.project
    ingest_groups(
        acme,
        small_group("g4@2", step=2, instance_id="t-4", rewards=(1, 1, 0, 1)),
        small_group("g5@1", instance_id="t-5", rewards=(1, 0)),
    )
    hostile = small_group("g6@1", instance_id="t-6", rewards=(1, 0), problem_statement=HOSTILE_NOTE)
    hostile["rollouts"][0]["patch"] = HOSTILE_PATCH
    ingest_groups(acme, hostile)
    g = {x.uid: x for x in Group.objects.all()}

    review(
        bob,
        g["g1@1"],
        [
            ItemInput(0, "T1", 1, scores=scores(5)),
            ItemInput(1, "T2", 2, scores=scores(3)),
            ItemInput(3, "T3", 3, scores=scores(2)),
        ],
    )
    review(
        dan,
        g["g1@1"],
        [
            ItemInput(0, "T2", 2, scores=scores(3)),
            ItemInput(1, "T1", 1, scores=scores(5)),
            ItemInput(3, "T3", 3, scores=scores(2)),
        ],
    )
    review(
        fay,
        g["g1@1"],
        [
            ItemInput(0, "T1", 1, scores=scores(5)),
            ItemInput(1, "T2", 2, scores=scores(3), note=FAY_NOTE_1),
            ItemInput(3, "T3", 3, cheat=True, scores=scores(1), note=FAY_NOTE_3),
        ],
        kind=Judgment.Kind.ADJUDICATION,
        reason=Judgment.Reason.REVIEWERS_DISAGREE,
        note="settled on the diff",
    )

    review(
        bob,
        g["g2@1"],
        [
            ItemInput(0, "T1", 1, scores=scores(5)),
            ItemInput(1, "T1", 1, scores=scores(4)),
            ItemInput(3, "T2", 2, cheat=True, scores=scores(3), note=HOSTILE_NOTE),
        ],
    )
    flag = CheatDecision.objects.get(rollout__group=g["g2@1"], source=CheatDecision.Source.REVIEWER)
    audit_cheat(decision=flag, auditor=erin, confirmed=True, reason=ERIN_REASON)

    review(
        bob,
        g["g4@2"],
        [
            ItemInput(0, "T1", 1, scores=scores(4)),
            ItemInput(1, "T2", 2, cheat=True, scores=scores(4)),
            ItemInput(3, "T3", 3, scores=scores(3)),
        ],
    )
    review(
        dan,
        g["g4@2"],
        [
            ItemInput(0, "T1", 1, scores=scores(5)),
            ItemInput(1, "T3", 3, scores=scores(2)),
            ItemInput(3, "T2", 2, scores={"minimality": 4}),
        ],
    )

    review(dan, g["g6@1"], [ItemInput(0, "T2", note=HOSTILE_NOTE)], note=HOSTILE_NOTE)
    return g


def get(client, **params):
    r = client.get(URL, {"project": "acme", "run": "r1", **params})
    assert r.status_code == 200, r.content if not r.streaming else ""
    assert r["Content-Type"] == "application/x-ndjson"
    body = b"".join(r.streaming_content)
    return body, [json.loads(line) for line in body.decode().splitlines()]


@pytest.fixture
def as_alice(client, alice):
    client.force_login(alice)
    return client


# --- who may export ----------------------------------------------------------------------------


def test_refusals(client, labeled_run, alice, bob, carol, trainer_token):
    assert client.get(URL, {"project": "acme", "run": "r1"}).status_code == 401  # anonymous
    client.force_login(bob)  # bob reviews but may not export
    r = client.get(URL, {"project": "acme", "run": "r1"})
    assert r.status_code == 403 and "does not allow" in r.json()["detail"]
    client.force_login(carol)  # carol is an admin elsewhere: acme does not exist for her
    assert client.get(URL, {"project": "acme", "run": "r1"}).status_code == 404
    client.logout()
    auth = {"HTTP_AUTHORIZATION": f"Token {trainer_token}"}
    assert client.get(URL, {"run": "r1"}, **auth).status_code == 200  # the token implies acme
    assert client.get(URL, {"project": "other", "run": "r1"}, **auth).status_code == 404
    assert client.post(URL + "?run=r1", **auth).status_code == 405
    for params, status, words in [
        ({"run": "nope"}, 404, "no run 'nope'"),
        ({}, 400, "'run' is required"),
        ({"run": "r1", "format": "csv"}, 400, "format must be one of jsonl, sft"),
        ({"run": "r1", "label": "grader"}, 400, "label must be one of consensus, adjudicated"),
        ({"run": "r1", "since": "yesterday"}, 400, "ISO 8601"),
        ({"run": "r1", "since": "2026-01-01T00:00:00"}, 400, "needs a timezone"),
        ({"run": "r1", "since": "2026-01-01T00:00:00 00:00"}, 400, "%2B"),
    ]:
        r = client.get(URL, params, **auth)
        assert r.status_code == status and words in r.json()["detail"], (params, r.content)
    client.force_login(alice)
    assert client.get(URL, {"run": "r1"}).status_code == 400  # a session names its project


# --- gagar-labeled-group/1 --------------------------------------------------------------------


def test_jsonl_lines_hold_rollouts_judgments_consensus_cheats_and_verdicts(as_alice, labeled_run):
    body, lines = get(as_alice)
    assert [line["uid"] for line in lines] == ["g1@1", "g2@1", "g6@1", "g4@2"]  # (step, uid); g3, g5 never judged
    by_uid = {line["uid"]: line for line in lines}

    g1 = by_uid["g1@1"]
    assert {k: g1[k] for k in ("format", "run", "step", "instance_id", "repo")} == {
        "format": "gagar-labeled-group/1",
        "run": "r1",
        "step": 1,
        "instance_id": "t-1",
        "repo": "octo/widgets",
    }
    assert [r["index"] for r in g1["rollouts"]] == [0, 1, 2, 3]
    r1 = g1["rollouts"][1]
    assert r1["reward"] == 1.0 and r1["passed"] is True and r1["exit_status"] == "Submitted"
    assert r1["patch"] == small_group("x", rewards=(1, 1))["rollouts"][1]["patch"]
    assert r1["summary"] == {
        "n_messages": 2,
        "tokens": 1001,
        "patch_files": 1,
        "patch_added": 1,
        "patch_removed": 1,
        "patch_parses": True,
        "tests_passed": 1,
        "tests_failed": 0,
    }
    assert g1["rollouts"][2]["summary"]["tests_failed"] == 1 and "messages" not in g1["rollouts"][2]
    assert b'"messages"' not in body  # trajectories stay home

    assert [(j["reviewer"], j["kind"], j["blind"], j["reason"]) for j in g1["judgments"]] == [
        ("bob", "review", True, None),
        ("dan", "review", True, None),
        ("fay", "adjudication", False, "reviewers_disagree"),
    ]
    fay = g1["judgments"][2]
    assert fay["note"] == "settled on the diff"
    assert fay["items"][1] == {"index": 1, "tier": "T2", "rank": 2, "cheat": False, "scores": scores(3), "note": FAY_NOTE_1}
    assert datetime.fromisoformat(fay["created_at"]) == Judgment.objects.get(kind="adjudication").created_at
    assert g1["consensus"] == {
        "source": "adjudication",
        "reviewers": ["fay"],
        "items": [
            {"index": 0, "tier": "T1", "rank": 1, "cheat": False, "scores": scores(5)},
            {"index": 1, "tier": "T2", "rank": 2, "cheat": False, "scores": scores(3)},
            {"index": 3, "tier": "T3", "rank": 3, "cheat": True, "scores": scores(1)},
        ],
    }
    grader_flag, fay_flag = g1["cheat_decisions"]
    assert (grader_flag["index"], grader_flag["source"], grader_flag["confirmed"], grader_flag["audits"]) == (
        3,
        "grader",
        None,
        [],
    )
    assert (fay_flag["source"], fay_flag["reason"]) == ("reviewer", f"flagged by fay: {FAY_NOTE_3}")
    (verdict,) = g1["verdicts"]
    assert (verdict["grader"], verdict["status"], verdict["errors"]) == (GRADER, "valid", [])
    assert [(x["index"], x["tier"], x["rank"], x["cheat"], x["uncited"]) for x in verdict["grades"]] == [
        (0, "T1", 1, False, False),
        (1, "T2", 2, False, False),
        (3, "T3", 3, True, False),
    ]
    assert verdict["grades"][1]["evidence"] == [{"kind": "patch", "rollout": 1, "locator": "w.py:2", "note": SECRET_NOTE}]

    g2 = by_uid["g2@1"]
    assert g2["consensus"]["source"] == "single" and g2["consensus"]["reviewers"] == ["bob"]
    assert [(i["index"], i["tier"], i["rank"], i["cheat"]) for i in g2["consensus"]["items"]] == [
        (0, "T1", 1, False),
        (1, "T1", 1, False),
        (3, "T2", 2, True),
    ]
    (audited,) = g2["cheat_decisions"]
    assert {k: audited[k] for k in ("index", "source", "author", "confirmed", "decided_by")} == {
        "index": 3,
        "source": "reviewer",
        "author": "bob",
        "confirmed": True,
        "decided_by": "erin",
    }
    assert isinstance(audited["evidence"], list)  # the citations in bob's note, as the audit page links them
    assert [(a["auditor"], a["confirmed"], a["reason"]) for a in audited["audits"]] == [("erin", True, ERIN_REASON)]
    assert datetime.fromisoformat(audited["audits"][0]["created_at"]) == CheatAudit.objects.get().created_at
    assert g2["verdicts"] == []

    g4 = by_uid["g4@2"]
    assert g4["step"] == 2 and [j["reviewer"] for j in g4["judgments"]] == ["bob", "dan"]
    assert g4["consensus"] == {
        "source": "median",
        "reviewers": ["bob", "dan"],
        "items": [
            {"index": 0, "tier": "T1", "rank": 1, "cheat": False, "scores": scores(4)},  # lower median of 4 and 5
            {"index": 1, "tier": "T2", "rank": 2, "cheat": False, "scores": scores(2)},  # one of two flagged: no majority
            {"index": 3, "tier": "T2", "rank": 2, "cheat": False, "scores": scores(3) | {"minimality": 3}},
        ],
    }

    assert by_uid["g6@1"]["consensus"]["items"] == [{"index": 0, "tier": "T2", "rank": 1, "cheat": False, "scores": {}}]


def test_a_verdict_posted_without_citations_is_exported_with_its_judgments_marked_uncited(as_alice, labeled_run):
    # fleet@1 grades from elsewhere: its T2 of g2@1's #3 says nothing of why
    record_verdict(
        group=labeled_run["g2@1"],
        grader="fleet@1",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T1", 1), GradeInput(3, "T2", 2)],
        raw={"external": {"posted_by": "alice"}},
    )
    (verdict,) = next(line for line in get(as_alice)[1] if line["uid"] == "g2@1")["verdicts"]
    assert verdict["grader"] == "fleet@1"
    assert [(x["index"], x["tier"], x["evidence"], x["uncited"]) for x in verdict["grades"]] == [
        (0, "T1", [], False),
        (1, "T1", [], False),
        (3, "T2", [], True),
    ]


def test_untrusted_text_round_trips_unchanged(as_alice, labeled_run):
    body, lines = get(as_alice)
    g6 = next(line for line in lines if line["uid"] == "g6@1")
    assert g6["rollouts"][0]["patch"] == HOSTILE_PATCH
    assert g6["problem_statement"] == HOSTILE_NOTE
    assert g6["judgments"][0]["note"] == HOSTILE_NOTE and g6["judgments"][0]["items"][0]["note"] == HOSTILE_NOTE
    assert b"&lt;" not in body and b"&quot;" not in body  # JSON escaping only, never HTML's
    assert all(b"\n" not in line for line in body.split(b"\n"))  # a newline in a note cannot split a line


def test_adjudicated_label_selects_adjudicated_groups(as_alice, labeled_run):
    _, lines = get(as_alice, label="adjudicated")
    assert [line["uid"] for line in lines] == ["g1@1"]


# --- since ---------------------------------------------------------------------------------------


def _age_everything(when: datetime) -> None:
    Judgment.objects.update(created_at=when)
    Verdict.objects.update(created_at=when)
    CheatDecision.objects.update(created_at=when)
    CheatDecision.objects.filter(decided_at__isnull=False).update(decided_at=when)
    CheatAudit.objects.update(created_at=when)


def test_since_takes_groups_changed_strictly_later(as_alice, labeled_run, dan, erin):
    long_ago = datetime(2026, 1, 1, tzinfo=UTC)
    _age_everything(long_ago)
    cut = long_ago + timedelta(hours=1)
    _, lines = get(as_alice)
    assert {line["changed_at"] for line in lines} == {"2026-01-01T00:00:00+00:00"}
    assert get(as_alice, since=cut.isoformat())[1] == []
    assert [line["uid"] for line in get(as_alice, since="2025-12-31T23:00:00Z")[1]] == ["g1@1", "g2@1", "g6@1", "g4@2"]

    review(dan, labeled_run["g2@1"], [ItemInput(0, "T1"), ItemInput(1, "T2"), ItemInput(3, "T3")])  # a new review
    flag = CheatDecision.objects.get(rollout__group=labeled_run["g4@2"])
    audit_cheat(decision=flag, auditor=erin, confirmed=False, reason="no leak; the agent wrote it")  # a new audit
    record_verdict(group=labeled_run["g6@1"], grader="heuristic@1", status="invalid", errors=["no evidence"])  # a new verdict
    _, lines = get(as_alice, since=cut.isoformat().replace("+00:00", "Z"))
    assert [line["uid"] for line in lines] == ["g2@1", "g6@1", "g4@2"]
    newest = max((line["changed_at"] for line in lines), key=datetime.fromisoformat)
    assert cut < datetime.fromisoformat(newest) <= timezone.now()
    g2 = lines[0]
    assert g2["consensus"]["source"] == "median" and datetime.fromisoformat(g2["changed_at"]) > cut
    # The newest changed_at as the next `since` returns nothing: the bound is strict.
    assert get(as_alice, since=newest)[1] == []
    # An old-enough `since` sees every line again, the aged ones unchanged.
    assert len(get(as_alice, since="2025-01-01T00:00:00+00:00")[1]) == 4


# --- SFT -----------------------------------------------------------------------------------------


def _verdict_of(example: dict) -> dict:
    last = example["messages"][-1]
    assert last["role"] == "assistant"
    (call,) = last["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "submit_verdict"
    return json.loads(call["function"]["arguments"])


def _reading(example: dict) -> list[list[tuple[str, dict]]]:
    """(name, arguments) of the example's tool calls before the verdict, one list per assistant turn."""
    return [
        [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m["tool_calls"]]
        for m in example["messages"][2:-1]
        if m["role"] == "assistant"
    ]


def _live_result(workspace, call: dict) -> str:
    """What the live grader puts in the tool message answering `call` (grading.grader.llm)."""
    return json.dumps(
        call_tool(workspace, call["function"]["name"], json.loads(call["function"]["arguments"])), ensure_ascii=False
    )


def test_sft_examples_replay_the_graders_live_protocol_and_validate(as_alice, labeled_run):
    body, examples = get(as_alice, format="sft")
    # g6's label has no rubric scores: the grader's schema needs them, so no example (none invented).
    assert [(e["metadata"]["uid"], e["metadata"]["label"]) for e in examples] == [
        ("g1@1", "adjudication"),
        ("g2@1", "single"),
        ("g4@2", "median"),
    ]
    for example in examples:
        group = labeled_run[example["metadata"]["uid"]]
        workspace = load_workspace(group)  # the grader's own loader, trajectories and all
        messages = example["messages"]
        n = len(workspace.rollouts)
        # system, user, assistant(get_task, list_rollouts), 2 tools, assistant(2 per rollout), 2n tools, assistant(verdict)
        assert [m["role"] for m in messages] == (
            ["system", "user", "assistant", "tool", "tool", "assistant"] + ["tool"] * (2 * n) + ["assistant"]
        )
        assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT}
        # the grader's own opening line: rollout indexes, nothing from the group's content
        passing = [r.index for r in workspace.passing]
        assert messages[1] == {
            "role": "user",
            "content": (
                f"Grade this group. It has {n} rollouts; the passing ones are {passing}. Judge exactly these, then call "
                "submit_verdict."
            ),
        }
        assert _reading(example) == [
            [("get_task", {}), ("list_rollouts", {})],
            [(name, {"rollout": r.index}) for r in workspace.rollouts for name in ("read_patch", "test_outcomes")],
        ]
        calls = [c for m in messages if m["role"] == "assistant" for c in m["tool_calls"]]
        assert [c["id"] for c in calls] == [f"call_{i}" for i in range(len(calls))]  # deterministic, unique
        assert all(
            m["content"] == "" and set(m) == {"role", "content", "tool_calls"} for m in messages if m["role"] == "assistant"
        )
        # each tool message answers the call before it, with exactly what the live tool returns on this group
        by_id = {c["id"]: c for c in calls}
        tool_messages = [m for m in messages if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_messages] == [c["id"] for c in calls[:-1]]
        for message in tool_messages:
            assert set(message) == {"role", "tool_call_id", "content"}
            assert message["content"] == _live_result(workspace, by_id[message["tool_call_id"]])
            assert "error" not in json.loads(message["content"])
        task = json.loads(tool_messages[0]["content"])
        assert (task["uid"], task["passing_rollouts"], task["has_repository"]) == (group.uid, passing, False)
        assert example["tools"] == tool_specs(workspace)
        arguments = _verdict_of(example)
        assert validate(VERDICT_SCHEMA, arguments) == []
        judgments, errors = parse_verdict(arguments)
        assert errors == [] and {j.index for j in judgments} == set(passing)
        assert example["metadata"] | {"reviewers": None} == {
            "format": "gagar-grader-sft/2",
            "grader_protocol": 1,
            "label": example["metadata"]["label"],
            "reviewers": None,
            "run": "r1",
            "step": group.step.number,
            "uid": group.uid,
        }

    g1, g2, g4 = (_verdict_of(e)["judgments"] for e in examples)
    # fay's citations that resolve become evidence, each with her note; w.py:99 does not resolve and is dropped.
    assert g1 == [
        {"rollout": 0, "tier": "T1", "rank": 1, "scores": scores(5), "cheat": False, "evidence": []},
        {
            "rollout": 1,
            "tier": "T2",
            "rank": 2,
            "scores": scores(3),
            "cheat": False,
            "evidence": [
                {"kind": "patch", "rollout": 1, "locator": "w.py:2", "note": FAY_NOTE_1},
                {"kind": "turn", "rollout": 1, "locator": "1", "note": FAY_NOTE_1},
            ],
        },
        {
            "rollout": 3,
            "tier": "T3",
            "rank": 3,
            "scores": scores(1),
            "cheat": True,
            "evidence": [{"kind": "turn", "rollout": 3, "locator": "1", "note": FAY_NOTE_3}],
        },
    ]
    assert problems(load_workspace(labeled_run["g1@1"]), parse_verdict({"judgments": g1})[0]) == []
    # bob cited nothing on #3: no evidence is made up (the grader would ask for one); erin's audit sets the cheat flag.
    assert [(j["rollout"], j["rank"], j["cheat"], j["evidence"]) for j in g2] == [
        (0, 1, False, []),
        (1, 1, False, []),
        (3, 2, True, []),
    ]
    assert [(j["rollout"], j["tier"], j["rank"], j["cheat"]) for j in g4] == [
        (0, "T1", 1, False),
        (1, "T2", 2, False),
        (3, "T2", 2, False),
    ]
    assert b"&lt;" not in body

    again, _ = get(as_alice, format="sft")
    assert again == body  # deterministic
    assert [e["metadata"]["uid"] for e in get(as_alice, format="sft", label="adjudicated")[1]] == ["g1@1"]


def test_sft_examples_see_the_repository_the_live_grader_sees(as_alice, labeled_run):
    Task.objects.filter(instance_id="t-1").update(base_commit="a" * 40)  # g1's task names a commit; the others do not
    for example in get(as_alice, format="sft")[1]:
        workspace = load_workspace(labeled_run[example["metadata"]["uid"]])
        assert (workspace.repo_view is not None) == (example["metadata"]["uid"] == "g1@1")
        assert example["tools"] == tool_specs(workspace)  # the repository tools offered exactly when the grader offers them
        assert ("read_file" in [t["function"]["name"] for t in example["tools"]]) is (workspace.repo_view is not None)
        get_task = example["messages"][3]
        assert get_task["content"] == _live_result(workspace, example["messages"][2]["tool_calls"][0])
        assert json.loads(get_task["content"])["has_repository"] is (workspace.repo_view is not None)


def test_an_overturned_audit_clears_the_labels_cheat_flag(as_alice, labeled_run, erin):
    flag = CheatDecision.objects.get(rollout__group=labeled_run["g2@1"])
    audit_cheat(decision=flag, auditor=erin, confirmed=False, reason="the fix was the agent's own")
    example = next(e for e in get(as_alice, format="sft")[1] if e["metadata"]["uid"] == "g2@1")
    assert [j["cheat"] for j in _verdict_of(example)["judgments"]] == [False, False, False]


def test_a_fine_tuned_grader_can_replay_the_example_through_the_real_grader_loop(as_alice, labeled_run):
    """The LLM grader, run against a local OpenAI-compatible server that answers each of its
    requests with the example's next assistant message, sends exactly the example's
    preceding messages (its own tool results equal to the example's) and tools each time,
    and accepts the verdict (schema and every citation) on the last turn."""
    from tests.helpers.fake_openai import FakeOpenAI, completion

    for example in get(as_alice, format="sft")[1]:
        uid = example["metadata"]["uid"]
        turns = [k for k, m in enumerate(example["messages"]) if m["role"] == "assistant"]
        script = [
            completion({"content": example["messages"][k]["content"], "tool_calls": example["messages"][k]["tool_calls"]})
            for k in turns
        ]
        with FakeOpenAI(script) as server:
            grader = LLMGrader(
                base_url=server.base_url, model="fake-model", api_key="test-key", max_retries=0, request_timeout=5.0
            )
            result = grader.grade(load_workspace(labeled_run[uid]))
            grader.close()
        # one request per assistant turn, each carrying the transcript up to that turn
        assert len(server.requests) >= len(turns), (uid, result.errors)
        for request, k in zip(server.requests, turns):
            assert request["messages"] == example["messages"][:k], uid
            assert request["tools"] == example["tools"]
        assert [len(c["calls"]) for c in result.raw["transcript"]][: len(turns)] == [
            len(example["messages"][k]["tool_calls"]) for k in turns
        ]
        if uid == "g1@1":  # fay cited every negative judgment: the grader accepts the label as it stands
            assert result.status == "valid", result.errors
            assert len(server.requests) == len(turns) == 3 and result.usage["turns"] == 3
            assert [(j.index, j.tier, j.rank, j.cheat) for j in result.judgments] == [
                (0, "T1", 1, False),
                (1, "T2", 2, False),
                (3, "T3", 3, True),
            ]
        else:  # uncited negatives: the grader asks for evidence (the example never invents it)
            (submitted,) = result.raw["transcript"][len(turns) - 1]["calls"]
            assert submitted["name"] == "submit_verdict" and submitted["accepted"] is False and submitted["errors"] >= 1
            assert any(
                "needs at least one citation" in error
                for error in json.loads(server.requests[len(turns)]["messages"][-1]["content"])["errors"]
            )


# --- query count and chunking --------------------------------------------------------------------


@pytest.fixture
def many_groups(acme, alice, bob, erin):
    def make(n: int) -> None:
        ingest_groups(acme, *(small_group(f"q{i:02d}@1", instance_id=f"q-{i}", rewards=(1, 0, 1)) for i in range(n)))
        for group in Group.objects.filter(uid__startswith="q"):
            review(
                bob,
                group,
                [
                    ItemInput(0, "T1", scores=scores(5)),
                    ItemInput(2, "T2", cheat=True, scores=scores(3), note="w.py:2 and turn 1"),
                ],
            )
            cited = [{"kind": "turn", "rollout": 2, "locator": "1", "note": "x"}]
            record_verdict(
                group=group,
                grader="heuristic@1",
                status="valid",
                grades=[GradeInput(0, "T1", 1), GradeInput(2, "T2", 2, cheat=True, evidence=cited)],
            )
            decision = CheatDecision.objects.filter(rollout__group=group).first()
            audit_cheat(decision=decision, auditor=erin, confirmed=True, reason="read the fix")

    return make


# session + user, project + membership, run, the caller's open blind assignments in the run,
# group ids, then 9 per chunk of groups
QUERIES = 16  # jsonl; sft reads the project's rubric guide once more


@pytest.mark.parametrize("fmt", ["jsonl", "sft"])
@pytest.mark.parametrize("n", [2, 6])
def test_query_count_does_not_grow_with_groups(as_alice, many_groups, django_assert_num_queries, n, fmt):
    many_groups(n)
    with django_assert_num_queries(QUERIES + (fmt == "sft")):
        _, lines = get(as_alice, format=fmt)
    assert len(lines) == n


def test_chunks_keep_order_and_content(as_alice, labeled_run, many_groups, monkeypatch):
    many_groups(5)
    whole = {fmt: get(as_alice, format=fmt)[0] for fmt in ("jsonl", "sft")}
    monkeypatch.setattr(selectors_labeled, "CHUNK_GROUPS", 2)
    monkeypatch.setattr(selectors_labeled, "SFT_CHUNK_GROUPS", 2)
    for fmt in ("jsonl", "sft"):
        assert get(as_alice, format=fmt)[0] == whole[fmt]
    assert len(whole["jsonl"].splitlines()) == 9


# --- the project's rubric guide in the SFT examples; an empty export says why ---------------------


def test_sft_examples_carry_the_projects_rubric_guide(client, as_alice, labeled_run):
    from grading.method.guide import DEFAULT_GUIDE
    from grading.method.project_guides import save_guide
    from grading.method.tiers import TIERS

    fields = {f"tier-{t}": DEFAULT_GUIDE.tier(t) for t in TIERS}
    for d in DEFAULT_GUIDE.dimensions:
        fields[f"meaning-{d.name}"], fields[f"example-{d.name}"] = d.meaning, d.example
    fields["tier-T3"] = "T3-EDITED: passes, but a maintainer would ask for a rewrite"
    fields["example-side_effect_avoidance"] = "SIDE-EFFECT-EXAMPLE-EDITED: deleting a flaky test scores 1"
    save_guide(project=labeled_run["g1@1"].run.project, user=None, data=fields)
    _, examples = get(as_alice, format="sft")
    assert examples
    for example in examples:
        system = example["messages"][0]
        assert system["role"] == "system"
        assert "T3 = T3-EDITED: passes, but a maintainer would ask for a rewrite" in system["content"]
        assert "SIDE-EFFECT-EXAMPLE-EDITED" in system["content"]


def test_an_export_without_lines_says_why(client, as_alice, labeled_run, groups):
    from grading.models import Run

    def empty(**params):
        r = as_alice.get(URL, {"project": "acme", **params})
        assert r.status_code == 200 and b"".join(r.streaming_content) == b""
        assert r["X-Gagar-Empty"] == "true"
        return r["X-Gagar-Empty-Reason"]

    Run.objects.create(project=groups["g1@1"].run.project, name="fresh")
    assert "has a human judgment yet" in empty(run="fresh", format="sft")
    assert "has a human judgment yet" in empty(run="fresh")
    assert "changed after" in empty(run="r1", format="sft", since="2999-01-01T00:00:00Z")
    # Judged groups whose labels lack rubric scores: no example, and the reason says so.
    JudgmentItem.objects.filter(judgment__group__run__name="r1").update(scores={})
    reason = empty(run="r1", format="sft")
    assert "judged groups in run 'r1'" in reason and "all five rubric scores" in reason
    r = as_alice.get(URL, {"project": "acme", "run": "r1"})  # the JSON Lines export still has them
    assert b"".join(r.streaming_content) and "X-Gagar-Empty" not in r
