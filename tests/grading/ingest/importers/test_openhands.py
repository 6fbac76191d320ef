"""OpenHands output.jsonl (grading/ingest/importers/openhands.py) -> attempts, no database."""

from __future__ import annotations

import json

from grading.ingest.importers import openhands
from grading.ingest.importers.scan import NOTICE, SKIPPED, UNKNOWN
from tests.helpers import import_files as b
from tests.helpers.import_files import event, find, oh_line, reasons, write_jsonl
from tests.helpers.vendored import FIXTURES

A, B, C = "octo__widgets-101", "octo__widgets-102", "octo__widgets-103"


def test_real_openhands_output_gives_every_event_patches_and_unknown_rewards():
    finder, found = find(FIXTURES / "openhands-multi-swe-bench" / "output.jsonl")
    lines = [json.loads(line) for line in (FIXTURES / "openhands-multi-swe-bench" / "output.jsonl").read_text().splitlines()]
    assert sorted(found) == sorted(line["instance_id"] for line in lines)
    for line in lines:
        [item] = found[line["instance_id"]]
        attempt, rollout = item.attempt, item.rollout
        assert len(rollout["messages"]) == len(line["history"])  # one message per event
        agent_actions = sum(1 for e in line["history"] if e.get("source") == "agent" and e.get("action") not in (None, "system"))
        assert rollout["stats"]["turns"] == agent_actions
        assert rollout["patch"] == line["test_result"]["git_patch"] and rollout["patch"].startswith("diff --git")
        assert rollout["reward"] is None and rollout["source"]["format"] == "openhands"
        assert attempt.task["repo"] == "ponylang/ponyc" and attempt.task["base_commit"] == line["instance"]["base_commit"]
        assert attempt.problem_statement == line["instance"]["problem_statement"]
        usage = line["metrics"]["accumulated_token_usage"]
        assert rollout["stats"]["tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert rollout["stats"]["cost_usd"] == 0.0
    turns = {key: items[0].rollout["stats"]["turns"] for key, items in found.items()}
    assert turns == {"ponylang__ponyc-4595": 23, "ponylang__ponyc-4593": 33, "ponylang__ponyc-4588": 49}
    assert found["ponylang__ponyc-4588"][0].rollout["exit_status"].startswith("RuntimeError: Agent reached maximum iteration")
    assert found["ponylang__ponyc-4595"][0].rollout["exit_status"] == "finish"
    assert len(reasons(finder, UNKNOWN)) == 3 and "no test_result.report" in next(iter(reasons(finder, UNKNOWN).values()))
    first = found["ponylang__ponyc-4595"][0].rollout["messages"]
    assert [m["role"] for m in first[:6]] == ["system", "user", "user", "tool", "assistant", "tool"]
    assert (
        first[4]["action"] == "ls -l /workspace/ponylang__ponyc__0.1"
        and first[4]["tool_calls"][0]["function"]["name"] == "execute_bash"
    )
    assert first[5]["returncode"] == 0 and first[5]["tool_call_id"] == first[4]["tool_calls"][0]["id"]


def test_every_openhands_field_becomes_what_docs_say():
    attempt = openhands.attempt_from_line(oh_line(A, resolved=True), ref="run/output.jsonl#" + A)
    roles = [(m["role"], m["event"]) for m in attempt.messages]
    assert roles == [
        ("system", "system"),
        ("user", "message"),
        ("assistant", "run"),
        ("tool", "run"),
        ("assistant", "run_ipython"),
        ("tool", "run_ipython"),
        ("assistant", "read"),
        ("tool", "read"),
        ("assistant", "edit"),
        ("tool", "error"),
        ("assistant", "browse"),
        ("tool", "browse"),
        ("assistant", "think"),
        ("tool", "think"),
        ("assistant", "message"),
        ("assistant", "finish"),
    ]
    m = attempt.messages
    assert (m[2]["content"], m[2]["action"]) == ("Run the tests first.", "pytest -x")
    assert m[2]["tool_calls"] == [
        {"id": "t1", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "pytest -x"}'}}
    ]
    assert (m[3]["content"], m[3]["returncode"], m[3]["tool_call_id"]) == ("1 failed", 1, "t1")
    assert (
        m[4]["action"] == "print(1)"
        and m[6]["action"] == "read /w/pkg/core.py"
        and m[8]["action"] == "str_replace /w/pkg/core.py"
    )
    assert m[9]["content"].startswith("Parameter 'command'") and m[10]["action"] == "https://docs.example/f"
    assert (
        m[12]["content"] == "The fix holds."
        and m[14]["content"] == "Done, see the patch."
        and m[15]["content"] == "Fixed f for x == 0."
    )
    assert attempt.stats == {"tokens": 1234, "cost_usd": 0.42, "api_calls": 3, "turns": 8}
    assert attempt.task == {
        "repo": "octo/widgets",
        "base_commit": "d16bfe05a7",
        "problem_statement": f"Widget {A} breaks.",
        "FAIL_TO_PASS": ["t::a"],
        "PASS_TO_PASS": ["t::b", "t::c"],
    }
    assert attempt.metadata == {"agent": "CodeActAgent", "model": "claude-x", "openhands_commit": "abc123"}
    assert attempt.exit_status == "finish" and attempt.patch == b.patch()
    rollout = attempt.rollout(verdict=attempt.own_verdict)
    assert rollout["reward"] == 1.0
    assert rollout["metadata"]["verdict"] == {
        "status": "resolved",
        "source": "report",
        "ref": "run/output.jsonl#" + A,
        "rule": "test_result.report.resolved in the output line",
    }


def test_openhands_refusals_and_notes_name_the_file_and_line(tmp_path):
    unseen = oh_line(
        B,
        history=[
            event(0, "agent", action="teleport", args={}, message="Teleporting"),
            event(1, "environment", observation="hologram", content="bzzt"),
            event(2, "agent", message="neither"),
        ],
    )
    write_jsonl(
        tmp_path / "run" / "output.jsonl",
        [oh_line(A, resolved=False), unseen, oh_line(C, patch=None)],
        raw_lines=['{"instance_id": "octo__widgets-104", "history": [{"id": 0, "sou'],
    )
    finder, found = find(tmp_path / "run")
    assert sorted(found) == [A, B, C]
    assert found[A][0].rollout["reward"] == 0.0  # its own report: unresolved
    notes, skipped = reasons(finder, NOTICE), reasons(finder, SKIPPED)
    assert skipped["run/output.jsonl"].startswith("line 4: truncated or invalid JSON")
    assert notes[f"run/output.jsonl#{B}"] == (
        "line 2: event types OpenHands does not define, kept as plain messages: "
        "action 'teleport' ×1, no action or observation ×1, observation 'hologram' ×1"
    )
    assert [(m["role"], m["content"]) for m in found[B][0].rollout["messages"]] == [
        ("assistant", "Teleporting"),
        ("tool", "bzzt"),
        ("user", "neither"),
    ]
    assert found[B][0].rollout["reward"] is None and f"run/output.jsonl#{B}" in reasons(finder, UNKNOWN)
    # a history without a patch: nothing to evaluate, the harness fails it; said so
    assert found[C][0].rollout["reward"] == 0.0 and found[C][0].rollout["patch"] == ""
    assert notes[f"run/output.jsonl#{C}"].startswith("a history without a patch (test_result.git_patch empty or missing)")


def test_openhands_reward_from_a_report_beside_it_and_from_the_evaluated_copy(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "output.jsonl", [oh_line(A), oh_line(B), oh_line(C)])
    b.write(run / "report.json", b.summary(resolved=[A], unresolved=[B]))  # OpenHands' eval_infer summary
    write_jsonl(run / "output.swebench_eval.jsonl", [oh_line(C, resolved=True)])
    finder, found = find(run)
    assert sorted(found) == [A, B, C]  # the evaluated copy adds verdicts, not rollouts
    assert [found[i][0].rollout["reward"] for i in (A, B, C)] == [1.0, 0.0, 1.0]
    assert found[A][0].rollout["metadata"]["verdict"]["ref"] == "run/report.json"
    assert found[C][0].rollout["metadata"]["verdict"]["ref"] == "run/output.swebench_eval.jsonl"
    assert not reasons(finder, UNKNOWN) and not reasons(finder, SKIPPED)


def test_format_openhands_is_forced_and_other_formats_refuse_it(tmp_path):
    path = write_jsonl(tmp_path / "output.jsonl", [oh_line(A)])
    assert list(find(path, fmt="openhands")[1]) == [A]
    finder, found = find(path, fmt="swebench")
    assert not found and "an OpenHands output.jsonl, but --format swebench" in reasons(finder, SKIPPED)["output.jsonl"]
