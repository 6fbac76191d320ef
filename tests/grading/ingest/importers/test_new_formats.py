"""OpenHands output.jsonl, verl rollout dumps and pre-2024 SWE-bench harness reports, no database.

The verl dumps are written by `dump_generations` (tests/helpers/import_files.py), which lays rows out exactly as verl's
`RayPPOTrainer._dump_generations` (verl/trainer/ppo/ray_trainer.py) does: a dict of equal-length
lists (`input`, `output`, `gts`, `score`, `step` and each reward extra of length n), one
`json.dumps(..., ensure_ascii=False)` object per sample, joined by newlines, to `<step>.jsonl`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grading.ingest.importers import openhands, verl
from grading.ingest.importers.scan import NOTICE, SKIPPED, UNKNOWN, RunFinder, Source
from tests.helpers import import_files as b
from tests.helpers.import_files import PROMPTS, dump_generations, event, oh_line, write_jsonl
from tests.helpers.vendored import FIXTURES

A, B, C = "octo__widgets-101", "octo__widgets-102", "octo__widgets-103"
PATCH = b.patch()


def find(*paths, fmt="auto", threshold=None, step=None):
    finder = RunFinder([Source(Path(p)) for p in paths], fmt=fmt, reward_threshold=threshold, step=step).scan()
    return finder, {key: finder.attempts(key) for key in finder.instance_ids}


def reasons(finder: RunFinder, kind: str) -> dict[str, str]:
    return {f.ref: f.reason for f in finder.findings if f.kind == kind}


# -- OpenHands -----------------------------------------------------------------------------


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


# -- verl ----------------------------------------------------------------------------------


def test_verl_dump_groups_rows_by_prompt_with_rewards_from_score(tmp_path):
    dump = tmp_path / "rollout_data"
    dump_generations(
        dump,
        12,
        [PROMPTS[0]] * 3 + [PROMPTS[1]] * 3,
        ["4", "5", "4", "cba", "cba", "abc"],
        [1.0, 0.0, 1.0, 1.0, 1.0, 0.0],
        {"acc": [True, False, True, True, True, False], "too_short": [1]},
        gts=["4", "4", "4", "cba", "cba", "cba"],
    )
    finder, found = find(dump)
    assert len(found) == 2
    groups = {finder.group_of(key): items for key, items in found.items()}
    ids = {verl.prompt_id(p): p for p in PROMPTS}
    for (instance_id, step, stem), items in groups.items():
        assert step == 12 and stem == instance_id and instance_id in ids
        assert [item.attempt.problem_statement for item in items] == [ids[instance_id]] * 3
    first = groups[(verl.prompt_id(PROMPTS[0]), 12, verl.prompt_id(PROMPTS[0]))]
    assert [i.rollout["reward"] for i in first] == [1.0, 0.0, 1.0]
    assert [i.rollout["source"]["ref"] for i in first] == [f"rollout_data/12.jsonl#line-{n}" for n in (1, 2, 3)]
    rollout = first[1].rollout
    assert rollout["messages"] == [{"role": "user", "content": PROMPTS[0]}, {"role": "assistant", "content": "5"}]
    assert rollout["patch"] == "" and rollout["stats"] == {"turns": 1} and rollout["source"]["format"] == "verl"
    assert rollout["metadata"] == {
        "score": 0.0,
        "text_only": True,
        "reward_extra": {"acc": False},
        "ground_truth": "4",
        "verdict": {"status": "unresolved", "source": "score", "ref": "rollout_data/12.jsonl#line-2", "rule": "score 0"},
    }
    assert reasons(finder, NOTICE) == {
        "rollout_data/12.jsonl": "verl dump: 6 rows in 2 group(s) at step 12 (the dump's own step)"
    }


def test_verl_rows_sharing_a_uid_are_one_group_even_when_prompts_repeat(tmp_path):
    dump = tmp_path / "d"
    uids = ["9f0c-a", "9f0c-a", "77b1-b", "77b1-b"]
    dump_generations(dump, 3, [PROMPTS[0]] * 4, ["4", "4", "5", "4"], [1, 1, 0, 1], {"uid": uids})
    finder, found = find(dump)
    groups = {finder.group_of(key)[2]: items for key, items in found.items()}
    assert sorted(groups) == ["77b1-b", "9f0c-a"]  # the same prompt twice in the batch: two groups, as GRPO had them
    assert [i.rollout["reward"] for i in groups["77b1-b"]] == [0.0, 1.0]
    assert groups["9f0c-a"][0].rollout["metadata"]["verl_uid"] == "9f0c-a"
    assert {finder.group_of(key)[0] for key in found} == {verl.prompt_id(PROMPTS[0])}  # one task


def test_verl_score_that_is_not_binary_refuses_the_file_naming_the_line_unless_a_threshold(tmp_path):
    dump = tmp_path / "d"
    dump_generations(dump, 1, PROMPTS, ["4", "cba"], [1.0, 0.0], {})
    dump_generations(dump, 2, [PROMPTS[0]] * 3, ["4", "5", "4"], [1.0, 0.25, 0.75], {})
    finder, found = find(dump)
    assert {finder.group_of(k)[1] for k in found} == {1}  # step 2's file refused whole
    assert reasons(finder, SKIPPED)["d/2.jsonl"].startswith("line 2: score 0.25 is not 0 or 1; give a reward threshold")
    finder, found = find(dump, threshold=0.5)
    step2 = next(items for key, items in found.items() if finder.group_of(key)[1] == 2)
    assert [i.rollout["reward"] for i in step2] == [1.0, 0.0, 1.0]
    assert [i.rollout["metadata"]["verdict"]["rule"] for i in step2] == [
        "score 1",
        "score 0.25 < threshold 0.5",
        "score 0.75 >= threshold 0.5",
    ]


def test_verl_broken_rows_refuse_their_file(tmp_path):
    dump = tmp_path / "d"
    dump.mkdir()
    (dump / "4.jsonl").write_text(json.dumps({"input": "p", "output": "o", "score": 1, "step": 4}) + '\n{"input": "p", "outp\n')
    (dump / "5.jsonl").write_text(json.dumps({"input": "p", "output": "o", "score": "high", "step": 5}) + "\n")
    (dump / "6.jsonl").write_text(json.dumps({"input": "p", "output": "o", "score": 1}) + "\n")  # no step: the file's name
    finder, found = find(dump, fmt="verl", step=9)
    skipped = reasons(finder, SKIPPED)
    assert skipped["d/4.jsonl"].startswith("line 2: truncated or invalid JSON")
    assert skipped["d/5.jsonl"] == "line 1: score must be a number, got 'high'"
    assert [finder.group_of(k)[1] for k in found] == [6]


# -- SWE-bench harness before 2024 ---------------------------------------------------------


@pytest.mark.parametrize("name", ["results.json", "final_report.json", "report.json"])
def test_older_harness_report_gives_pass_or_fail_to_every_rollout_with_a_prediction(tmp_path, name):
    run = b.mini_run(tmp_path / "run", {A: None, B: None, C: None})
    b.write(
        run / name,
        {
            "stats": {"generated": 3, "with_logs": 3, "applied": 2, "resolved": 1},
            "resolved": [A, "other__repo-9"],
            "applied": [A, B],
            "generated": [A, B, C],
            "resolved_per_project": {"octo/widgets": [A]},
        },
    )
    finder, found = find(run)
    rewards = {key: items[0].rollout["reward"] for key, items in found.items()}
    assert rewards == {A: 1.0, B: 0.0, C: 0.0}
    rules = {key: items[0].rollout["metadata"]["verdict"]["rule"] for key, items in found.items()}
    assert rules[A] == "listed in 'resolved' of the older harness report"
    assert rules[B] == "a prediction in this run and not in 'resolved' of the older harness report"
    assert rules[C].endswith("(not in 'applied': the patch did not apply)")
    assert reasons(finder, NOTICE)[f"run/{name}"] == (
        "older SWE-bench harness report: 1 instance(s) pass (listed in 'resolved'), 2 fail (a prediction in this run, not in "
        "'resolved'); 1 resolved id(s) have no trajectory or prediction here: other__repo-9"
    )
    assert not reasons(finder, UNKNOWN)


def test_older_harness_report_with_predictions_and_a_generated_list(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "preds.jsonl", [b.prediction(A, b.patch(1)), b.prediction(B, b.patch(2)), b.prediction(C, b.patch(3))])
    b.write(run / "results" / "results.json", {"resolved": [B], "generated": [A, B]})
    finder, found = find(run)
    assert {k: v[0].rollout["reward"] for k, v in found.items()} == {A: 0.0, B: 1.0, C: None}
    assert (
        "1 not in its 'generated' list get no verdict from it: octo__widgets-103"
        in reasons(finder, NOTICE)["run/results/results.json"]
    )
    assert reasons(finder, UNKNOWN) == {
        f"run/preds.jsonl#{C}": "no verdict (no report.json or run-summary entry for this instance): reward unknown"
    }
