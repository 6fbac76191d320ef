"""Importers, no database: every format and variant -> attempts with the right verdicts and findings."""

from __future__ import annotations

import json

import pytest

from grading.ingest.importers import mini_swe_agent, swe_agent
from grading.ingest.importers.common import SourceError, load_json, repo_of, verdicts_from_report_file
from grading.ingest.importers.scan import IGNORED, NOTICE, SKIPPED, UNKNOWN
from tests.helpers import import_files as b
from tests.helpers.import_files import find, reasons

A, B, C = "octo__widgets-101", "octo__widgets-102", "acme-corp__big.lib-7"


# -- mini-swe-agent ----------------------------------------------------------------------


def test_mini_v1_keeps_every_message_with_actions_thoughts_and_stats():
    traj = b.mini_v1(A, steps=3)
    attempt = mini_swe_agent.attempt_from_trajectory(traj, ref="r/x.traj.json")
    assert len(attempt.messages) == len(traj["messages"]) == 10
    assert [m["role"] for m in attempt.messages[:4]] == ["system", "user", "assistant", "user"]
    assert attempt.messages[2]["action"] == "grep -n 'def f' pkg/core.py | head -1"
    assert attempt.messages[2]["thought"].startswith("**Step 0**")  # the model's reasoning, from extra.response
    assert "extra" not in attempt.messages[2]  # raw responses are not stored twice
    assert "action" not in attempt.messages[1]  # the prompt's example commands are not actions
    assert attempt.stats == {"tokens": 4000, "cost_usd": 0.25, "api_calls": 4, "turns": 4}
    assert attempt.problem_statement == b.statement(A).strip()
    assert attempt.patch == b.patch() and attempt.exit_status == "Submitted"
    assert attempt.metadata["model"] == "google/gemini-3-pro-preview"


def test_mini_v11_tool_calls_tool_observations_and_exit_message():
    traj = b.mini_v11(A)
    attempt = mini_swe_agent.attempt_from_trajectory(traj, ref="r/x.traj.json")
    assert len(attempt.messages) == len(traj["messages"])
    assert [m["role"] for m in attempt.messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "exit"]
    call = attempt.messages[2]
    assert call["action"] == "ls pkg" and call["thought"] == "I should run ls pkg"
    assert call["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "ls pkg"}'}
    assert attempt.messages[3]["tool_call_id"] == "call_0" and attempt.messages[3]["returncode"] == 0
    assert attempt.format == "mini-swe-agent-1.1" and attempt.patch == b.patch()
    assert attempt.messages[-1]["content"] == b.patch()


def test_mini_v11_text_based_actions_come_from_extra():
    attempt = mini_swe_agent.attempt_from_trajectory(b.mini_v11(A, toolcalls=False), ref="x")
    assert attempt.messages[2]["action"] == "ls pkg" and "tool_calls" not in attempt.messages[2]
    assert attempt.messages[3]["role"] == "user"


def test_report_keyed_or_bare_and_repo_names():
    keyed = verdicts_from_report_file(b.report(A, True), instance_hint=None, ref="r")
    bare = verdicts_from_report_file(b.report(A, False, keyed=False), instance_hint=A, ref="r")
    assert keyed[A].reward == 1.0 and bare[A].reward == 0.0
    assert keyed[A].tests["FAIL_TO_PASS"]["success"] == ["tests/test_core.py::test_zero"]
    with pytest.raises(SourceError, match="bare report"):
        verdicts_from_report_file(b.report(A, True, keyed=False), instance_hint=None, ref="r")
    assert repo_of(C) == "acme-corp/big.lib" and repo_of("not-swebench") == ""


def test_mini_run_folder_with_reports_keyed_and_bare(tmp_path):
    run = b.mini_run(tmp_path / "run-1", {A: True, B: False})
    finder, found = find(run)
    assert sorted(found) == [A, B]
    (a,), (bb,) = found[A], found[B]
    assert (a.rollout["reward"], bb.rollout["reward"]) == (1.0, 0.0)
    assert a.rollout["source"] == {"format": "mini-swe-agent-1", "ref": f"run-1/trajs/{A}/{A}.traj.json"}
    assert a.rollout["tests"]["PASS_TO_PASS"]["success"] == ["tests/test_core.py::test_one"]
    assert a.rollout["metadata"]["verdict"] == {"status": "resolved", "source": "report", "ref": f"run-1/logs/{A}/report.json"}
    assert finder.findings == []


def test_flat_layout_and_run_summary_and_preds_json(tmp_path):
    run = tmp_path / "flat"
    b.write(run / f"{A}.traj.json", b.mini_v1(A, submission=b.patch(1)))
    b.write(run / f"{B}.traj.json", b.mini_v1(B, submission=b.patch(2)))
    b.write(run / f"{C}.traj.json", b.mini_v1(C, submission=""))  # limits exceeded, nothing submitted
    b.write(run / "gemini.eval-1.json", b.summary(resolved=[A], unresolved=[B], empty=[C]))
    b.write(run / "preds.json", {i: b.prediction(i, p) for i, p in ((A, b.patch(1)), (B, b.patch(2)), (C, ""))})
    finder, found = find(run)
    assert [found[i][0].rollout["reward"] for i in (A, B, C)] == [1.0, 0.0, 0.0]
    assert found[C][0].rollout["metadata"]["verdict"]["status"] == "empty_patch"
    assert finder.findings == []  # preds.json is the evaluated patches, not extra rollouts


def test_no_verdict_means_unknown_reward_and_says_so(tmp_path):
    run = b.mini_run(tmp_path / "r", {A: None, B: True})
    b.write(tmp_path / "r" / "trajs" / C / f"{C}.traj.json", b.mini_v1(C, submission="", exit_status="LimitsExceeded"))
    finder, found = find(run)
    assert found[A][0].rollout["reward"] is None
    assert found[A][0].rollout["metadata"]["verdict"]["status"] == "unknown"
    assert found[C][0].rollout["reward"] == 0.0  # empty patch: failing without any report
    unknown = reasons(finder, UNKNOWN)
    assert (
        list(unknown) == [f"r/trajs/{A}/{A}.traj.json"]
        and "no report.json or run-summary entry" in unknown[f"r/trajs/{A}/{A}.traj.json"]
    )
    assert "counted as failing" in reasons(finder, NOTICE)[f"r/trajs/{C}/{C}.traj.json"]


def test_evaluated_patch_that_differs_from_the_trajectory_gives_no_verdict(tmp_path):
    run = b.mini_run(tmp_path / "r", {A: True})
    b.write(run / "preds.json", {A: b.prediction(A, b.patch(99))})
    finder, found = find(run)
    assert found[A][0].rollout["reward"] is None
    assert "evaluated patch is not this attempt's patch" in reasons(finder, UNKNOWN)[f"r/trajs/{A}/{A}.traj.json"]


# -- SWE-agent -------------------------------------------------------------------------


def test_swe_agent_traj_history_thoughts_actions_and_stats(tmp_path):
    traj = b.swe_agent(A)
    (attempt,) = swe_agent.attempts_from_traj(traj, ref="x.traj", instance_id=A)
    assert [m["role"] for m in attempt.messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert attempt.metadata["demonstration_messages_left_out"] == 1
    assert attempt.messages[2]["thought"] == "I'll look at the file." and attempt.messages[2]["action"] == "open pkg/core.py"
    assert attempt.stats == {"tokens": 9500, "cost_usd": 0.4, "api_calls": 2, "turns": 2}
    assert attempt.problem_statement == b.statement(A).strip() and attempt.patch == b.patch()
    no_history = swe_agent.attempts_from_traj(b.swe_agent(A, history=False), ref="x.traj", instance_id=A)[0]
    assert [m["observation"] for m in no_history.messages] == [
        "[File: pkg/core.py (3 lines total)]\n1:def f(x):",
        "File updated.",
    ]


def test_swe_agent_pred_sidecar_summary_and_no_submission(tmp_path):
    exp = tmp_path / "swe-exp"
    b.write(exp / A / f"{A}.traj", b.swe_agent_attempt(A, submission=None))  # patch only in the .pred
    b.write(exp / A / f"{A}.pred", b.prediction(A, b.patch(5)))
    b.write(exp / B / f"{B}.traj", b.swe_agent_attempt(B, submission=None, exit_status=None))  # never finished
    b.write(exp / C / f"{C}.traj", b.swe_agent_attempt(C, submission=None, exit_status="exit_cost"))  # gave up
    b.write(exp / "run_batch_exit_statuses.yaml", "submitted: [a]\n")
    b.write(exp / "eval" / "swe-agent.run1.json", b.summary(resolved=[A], empty=[C]))
    finder, found = find(exp)
    assert found[A][0].rollout["patch"] == b.patch(5) and found[A][0].rollout["reward"] == 1.0
    assert found[B] == []
    assert found[C][0].rollout["reward"] == 0.0 and found[C][0].rollout["exit_status"] == "exit_cost"
    skipped = reasons(finder, SKIPPED)
    assert "did not finish" in skipped[f"swe-exp/{B}/{B}.traj"]
    assert "unrelated file" in reasons(finder, IGNORED)["swe-exp/run_batch_exit_statuses.yaml"]


def test_swe_agent_attempts_one_rollout_each_verdict_for_the_evaluated_one(tmp_path):
    exp = tmp_path / "retry"
    b.write(exp / A / f"{A}.traj", b.swe_agent_retry(A, [b.patch(1), b.patch(2), b.patch(1)], chosen=1))
    b.write(exp / "logs" / A / "report.json", b.report(A, True))
    finder, found = find(exp)
    rollouts = [f.rollout for f in found[A]]
    assert [r["source"]["ref"] for r in rollouts] == [f"retry/{A}/{A}.traj#attempt-{n}" for n in range(3)]
    assert [r["reward"] for r in rollouts] == [None, 1.0, None]
    assert len(reasons(finder, UNKNOWN)) == 2


# -- SWE-bench predictions ---------------------------------------------------------------


def test_predictions_jsonl_with_run_summary(tmp_path):
    run = tmp_path / "preds-run"
    lines = [b.prediction(A, b.patch(1)), b.prediction(B, ""), b.prediction(C, b.patch(3))]
    b.write(run / "all_preds.jsonl", "\n".join(json.dumps(p) for p in lines) + '\n{"instance_id": "tr')
    b.write(run / "gpt-5-mini.run-7.json", b.summary(resolved=[A], empty=[B], error=[C]))
    finder, found = find(run)
    assert [found[i][0].rollout["reward"] for i in (A, B, C)] == [1.0, 0.0, 0.0]
    assert found[C][0].rollout["metadata"]["verdict"]["status"] == "error"
    assert found[A][0].rollout["messages"] == [] and found[A][0].rollout["source"]["format"] == "swebench-predictions"
    assert found[A][0].rollout["source"]["ref"] == f"preds-run/all_preds.jsonl#{A}"
    assert "line 4: truncated or invalid JSON" in reasons(finder, SKIPPED)["preds-run/all_preds.jsonl"]


@pytest.mark.parametrize("shape", ["list", "dict"])
def test_predictions_json_with_harness_reports_and_test_logs(tmp_path, shape):
    run = tmp_path / "p"
    preds = [b.prediction(A, b.patch(1)), b.prediction(B, None)]
    b.write(run / "preds.json", preds if shape == "list" else {p["instance_id"]: p for p in preds})
    report_dir = run / "logs" / "run_evaluation" / "eval-1" / "gpt-5-mini" / A
    b.write(report_dir / "report.json", b.report(A, False))
    b.write(report_dir / "test_output.txt", "tests/test_core.py::test_zero FAILED\n")
    b.write(report_dir / "run_instance.log", "2025-11-18 building image\n")
    finder, found = find(run)
    assert found[A][0].rollout["reward"] == 0.0 and found[A][0].rollout["test_log"].endswith("test_zero FAILED\n")
    assert found[B][0].rollout["reward"] == 0.0 and found[B][0].rollout["patch"] == ""  # a null patch fails
    assert list(reasons(finder, SKIPPED)) == []  # the harness's own log is no refusal: it is not a file to import
    assert list(reasons(finder, IGNORED)) == ["p/logs/run_evaluation/eval-1/gpt-5-mini/octo__widgets-101/run_instance.log"]


# -- what is refused, each by name and reason --------------------------------------------


def test_broken_and_unrelated_files_are_named_and_the_rest_imported(tmp_path):
    run = b.mini_run(tmp_path / "mixed", {A: True, B: None})
    traj = run / "trajs" / C / f"{C}.traj.json"
    b.write(traj, json.dumps(b.mini_v1(C))[:500])  # truncated mid-file
    b.write(run / "logs" / "ghost__repo-9" / "report.json", b.report("ghost__repo-9", True, keyed=False))
    b.write(run / "notes.txt", "remember to rerun\n")
    b.write(run / "config.json", {"model": "x"})
    b.write(run / ".DS_Store", "junk")
    b.write(run / "minisweagent.log", "INFO started\n")
    finder, found = find(run)
    assert [len(found[i]) for i in (A, B, C)] == [1, 1, 0]
    skipped = reasons(finder, SKIPPED)
    assert "truncated or invalid JSON" in skipped[f"mixed/trajs/{C}/{C}.traj.json"]
    assert (
        skipped["mixed/logs/ghost__repo-9/report.json"]
        == "report for ghost__repo-9, which has no trajectory or prediction in this run"
    )
    # files no importer reads are named apart: they are not refusals of what was meant to be imported
    ignored = reasons(finder, IGNORED)
    assert "unrelated file" in ignored["mixed/notes.txt"] and "unrelated JSON" in ignored["mixed/config.json"]
    assert ignored["mixed/.DS_Store"] == "hidden file" and "unrelated file" in ignored["mixed/minisweagent.log"]
    assert not set(ignored) & set(skipped)
    assert "reward unknown" in reasons(finder, UNKNOWN)[f"mixed/trajs/{B}/{B}.traj.json"]


def test_explicit_format_skips_the_others_and_mismatched_names(tmp_path):
    run = tmp_path / "both"
    b.write(run / f"{A}.traj.json", b.mini_v1(A))
    b.write(run / B / f"{B}.traj", b.swe_agent(B))
    b.write(run / f"{C}.traj.json", b.mini_v1("someone__else-1"))
    b.write(run / "preds.jsonl", json.dumps(b.prediction("x__y-1", b.patch())) + "\n")
    finder, found = find(run, fmt="mini-swe-agent")
    assert len(found[A]) == 1 and found[B] == [] and found[C] == []
    skipped = reasons(finder, SKIPPED)
    assert skipped[f"both/{B}/{B}.traj"] == "not a mini-swe-agent trajectory (--format mini-swe-agent)"
    assert "does not match its name" in skipped[f"both/{C}.traj.json"]
    finder, found = find(run, fmt="swebench")
    assert (
        list(found) == ["x__y-1"]
        and "--format swebench reads predictions only" in reasons(finder, SKIPPED)[f"both/{A}.traj.json"]
    )


def test_several_runs_in_one_folder_keep_their_own_verdicts(tmp_path):
    parent = tmp_path / "sweep"
    b.mini_run(parent / "run-a", {A: True}, seed=1)
    b.mini_run(parent / "run-b", {A: False}, seed=2)
    _finder, found = find(parent)
    assert [(f.rollout["source"]["ref"].split("/")[1], f.rollout["reward"]) for f in found[A]] == [("run-a", 1.0), ("run-b", 0.0)]


def test_same_folder_name_twice_is_refused(tmp_path):
    b.mini_run(tmp_path / "x" / "run", {A: True})
    b.mini_run(tmp_path / "y" / "run", {A: False})
    finder, found = find(tmp_path / "x" / "run", tmp_path / "y" / "run")
    assert len(found[A]) == 1
    assert "also named 'run'" in reasons(finder, SKIPPED)[str(tmp_path / "y" / "run")]


def test_load_json_reasons(tmp_path):
    empty = b.write(tmp_path / "e.json", "")
    with pytest.raises(SourceError, match="empty file"):
        load_json(empty)
    with pytest.raises(SourceError, match="unreadable"):
        load_json(tmp_path / "missing.json")
