"""Small files shaped like the real ones (see tests/fixtures/mini-swe-agent-gemini-3-pro), written into tmp_path.

mini-swe-agent-1 follows the real Gemini run (fenced bash, `<returncode>` observations as
user messages, the raw response with usage and reasoning under `extra.response`);
mini-swe-agent-1.1 follows mini-swe-agent v2 (tool calls, `extra.actions`, `tool`
observations, a closing `exit` message); SWE-agent follows its `.traj` (trajectory,
history with demonstrations, info, replay_config, attempts of a retry loop).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from grading.ingest.importers.scan import RunFinder, Source

PATCH = (
    "diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n"
    "@@ -1,3 +1,3 @@\n def f(x):\n-    return x\n+    return x + {n}\n \n"
)
SYSTEM_V1 = "You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks.\n"


def patch(n: int = 1) -> str:
    return PATCH.replace("{n}", str(n))


def statement(instance_id: str) -> str:
    return f"Widget for {instance_id} breaks when x is zero.\r\n\r\nExpected 1, got 0."


def _instance_prompt(instance_id: str) -> str:
    return (
        f"<pr_description>\nConsider the following PR description:\n{statement(instance_id)}\n</pr_description>\n\n"
        "<instructions>\n## Submission\n```bash\n"
        "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```\n</instructions>"
    )


def _response(content: str, *, reasoning: str = "", tokens: int = 1000) -> dict:
    return {
        "id": "gen-1763510090-abc",
        "provider": "Google AI Studio",
        "model": "google/gemini-3-pro-preview",
        "object": "chat.completion",
        "created": 1763510090,
        "choices": [
            {
                "finish_reason": "stop",
                "index": 0,
                "message": {"role": "assistant", "content": content, "reasoning": reasoning or None},
            }
        ],
        "usage": {"prompt_tokens": tokens - 100, "completion_tokens": 100, "total_tokens": tokens, "cost": 0.005},
    }


def mini_v1(instance_id: str, *, submission: str | None = None, exit_status: str | None = "Submitted", steps: int = 2) -> dict:
    """A finished mini-swe-agent v1.x trajectory: 2 + 2*steps + 2 messages."""
    submission = patch() if submission is None else submission
    messages = [{"role": "system", "content": SYSTEM_V1}, {"role": "user", "content": _instance_prompt(instance_id)}]
    for i in range(steps):
        content = f"THOUGHT: step {i}, look around.\n\n```bash\ngrep -n 'def f' pkg/core.py | head -{i + 1}\n```"
        messages.append(
            {
                "role": "assistant",
                "content": content,
                "extra": {"response": _response(content, reasoning=f"**Step {i}**\n\nthinking")},
            }
        )
        messages.append({"role": "user", "content": "<returncode>0</returncode>\n<output>\n1:def f(x):\n</output>"})
    final = "THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```"
    messages.append({"role": "assistant", "content": final, "extra": {"response": _response(final)}})
    messages.append({"role": "user", "content": submission or ""})
    info = {
        "exit_status": exit_status,
        "submission": submission if exit_status else None,
        "model_stats": {"instance_cost": 0.25, "api_calls": steps + 1},
        "mini_version": "1.15.0",
        "config": {
            "model": {"model_name": "google/gemini-3-pro-preview"},
            "agent_type": "minisweagent.run.extra.swebench.ProgressTrackingAgent",
        },
    }
    return {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1", "instance_id": instance_id}


def mini_v11(instance_id: str, *, submission: str | None = None, toolcalls: bool = True) -> dict:
    """A mini-swe-agent v2 trajectory (`mini-swe-agent-1.1`), tool calling or text based."""
    submission = patch() if submission is None else submission
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": _instance_prompt(instance_id)},
    ]
    for i, command in enumerate(["ls pkg", "cat pkg/core.py"]):
        call_id = f"call_{i}"
        if toolcalls:
            messages.append(
                {
                    "role": "assistant",
                    "content": f"Looking at step {i}.",
                    "reasoning_content": f"I should run {command}",
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                        }
                    ],
                    "extra": {
                        "actions": [{"command": command, "tool_call_id": call_id}],
                        "response": _response(""),
                        "cost": 0.01,
                        "timestamp": 1.0,
                    },
                }
            )
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": f"<returncode>0</returncode>\n<output>\nout {i}\n</output>",
                    "extra": {"raw_output": f"out {i}\n", "returncode": 0, "timestamp": 2.0},
                }
            )
        else:
            content = f"Step {i}.\n\n```mswea_bash_command\n{command}\n```"
            messages.append(
                {
                    "role": "assistant",
                    "content": content,
                    "extra": {"actions": [{"command": command}], "response": _response(content), "cost": 0.01},
                }
            )
            messages.append(
                {
                    "role": "user",
                    "content": f"<returncode>0</returncode>\n<output>\nout {i}\n</output>",
                    "extra": {"raw_output": f"out {i}\n", "returncode": 0},
                }
            )
    messages.append({"role": "exit", "content": submission, "extra": {"exit_status": "Submitted", "submission": submission}})
    info = {
        "model_stats": {"instance_cost": 0.05, "api_calls": 2},
        "mini_version": "2.0.0",
        "exit_status": "Submitted",
        "submission": submission,
        "config": {"model": {"model_name": "anthropic/claude-sonnet-4-5"}},
    }
    return {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1.1", "instance_id": instance_id}


def swe_agent_attempt(
    instance_id: str, *, submission: str | None, exit_status: str | None = "submitted", history: bool = True
) -> dict:
    steps = [
        {
            "response": "I'll look at the file.\n\n```\nopen pkg/core.py\n```",
            "thought": "I'll look at the file.",
            "action": "open pkg/core.py\n",
            "observation": "[File: pkg/core.py (3 lines total)]\n1:def f(x):",
            "state": '{"open_file": "pkg/core.py"}',
            "execution_time": 0.1,
        },
        {
            "response": "Fix it.\n\n```\nedit 2:2\n    return x + 1\nend_of_edit\n```",
            "thought": "Fix it.",
            "action": "edit 2:2\n    return x + 1\nend_of_edit\n",
            "observation": "File updated.",
            "state": "{}",
            "execution_time": 0.2,
        },
    ]
    hist = [
        {
            "role": "system",
            "content": "SETTING: You are an autonomous programmer.",
            "agent": "main",
            "message_type": "system_prompt",
        },
        {
            "role": "user",
            "content": "Here is a demonstration of how to solve a task.",
            "agent": "main",
            "is_demo": True,
            "message_type": "demonstration",
        },
        {
            "role": "user",
            "content": (
                f"<uploaded_files>\n/testbed\n</uploaded_files>\n<pr_description>\n{statement(instance_id)}\n</pr_description>"
            ),
            "agent": "main",
            "message_type": "observation",
        },
    ]
    for step in steps:
        hist.append(
            {
                "role": "assistant",
                "content": step["response"],
                "thought": step["thought"],
                "action": step["action"],
                "agent": "main",
                "tool_calls": None,
                "message_type": "action",
                "thinking_blocks": [],
            }
        )
        hist.append(
            {"role": "user", "content": f"OBSERVATION:\n{step['observation']}", "agent": "main", "message_type": "observation"}
        )
    info = {
        "swe_agent_version": "1.1.0",
        "model_stats": {"instance_cost": 0.4, "tokens_sent": 9000, "tokens_received": 500, "api_calls": 2},
    }
    if exit_status:
        info["exit_status"] = exit_status
    if submission is not None:
        info["submission"] = submission
    data = {
        "trajectory": steps,
        "info": info,
        "environment": "swe_main",
        "replay_config": json.dumps({"problem_statement": {"text": statement(instance_id), "id": instance_id}}),
    }
    if history:
        data["history"] = hist
    return data


def swe_agent(instance_id: str, *, submission: str | None = None, **kwargs) -> dict:
    return swe_agent_attempt(instance_id, submission=patch() if submission is None else submission, **kwargs)


def swe_agent_retry(instance_id: str, submissions: list[str], chosen: int) -> dict:
    attempts = [swe_agent_attempt(instance_id, submission=s) for s in submissions]
    top = json.loads(json.dumps(attempts[chosen]))
    top["info"]["best_attempt_idx"] = chosen
    return {"attempts": attempts, **top}


def report(instance_id: str, resolved: bool, *, keyed: bool = True) -> dict:
    body = {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": resolved,
        "tests_status": {
            "FAIL_TO_PASS": {
                "success": ["tests/test_core.py::test_zero"] if resolved else [],
                "failure": [] if resolved else ["tests/test_core.py::test_zero"],
            },
            "PASS_TO_PASS": {"success": ["tests/test_core.py::test_one"], "failure": []},
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        },
    }
    return {instance_id: body} if keyed else body


def summary(*, resolved=(), unresolved=(), empty=(), error=()) -> dict:
    ids = [*resolved, *unresolved, *empty, *error]
    return {
        "total_instances": 500,
        "submitted_instances": len(ids),
        "completed_instances": len(ids) - len(error),
        "resolved_instances": len(resolved),
        "unresolved_instances": len(unresolved),
        "empty_patch_instances": len(empty),
        "error_instances": len(error),
        "completed_ids": sorted([*resolved, *unresolved]),
        "incomplete_ids": [],
        "empty_patch_ids": sorted(empty),
        "submitted_ids": sorted(ids),
        "resolved_ids": sorted(resolved),
        "unresolved_ids": sorted(unresolved),
        "error_ids": sorted(error),
        "schema_version": 2,
    }


def prediction(instance_id: str, model_patch: str | None, model: str = "gpt-5-mini") -> dict:
    return {"instance_id": instance_id, "model_name_or_path": model, "model_patch": model_patch}


def write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) if not isinstance(obj, str) else obj)
    return path


def mini_run(
    root: Path, outcomes: dict[str, bool | None], *, seed: int = 0, keyed: bool | None = None, v11: bool = False
) -> Path:
    """A mini-swe-agent run folder: trajs/<id>/<id>.traj.json and logs/<id>/report.json (none where the outcome is None)."""
    for n, (instance_id, resolved) in enumerate(outcomes.items()):
        traj = (mini_v11 if v11 else mini_v1)(instance_id, submission=patch(seed * 10 + n + 1))
        write(root / "trajs" / instance_id / f"{instance_id}.traj.json", traj)
        if resolved is not None:
            write(
                root / "logs" / instance_id / "report.json",
                report(instance_id, resolved, keyed=keyed if keyed is not None else n % 2 == 0),
            )
    return root


# OpenHands output.jsonl lines and verl rollout dumps


OPENHANDS_PATCH = patch()  # the patch oh_line gives a line by default


def event(id_, source, **fields):
    return {"id": id_, "timestamp": "2025-04-30T16:32:54", "source": source, "message": fields.pop("message", ""), **fields}


def tool(name, call_id, arguments):
    return {
        "function_name": name,
        "tool_call_id": call_id,
        "total_calls_in_response": 1,
        "model_response": {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
                        ],
                    }
                }
            ]
        },
    }


def oh_line(instance_id, *, patch=OPENHANDS_PATCH, resolved=None, history=None, **extra):
    history = (
        history
        if history is not None
        else [
            event(0, "agent", action="system", args={"content": "You are OpenHands agent."}),
            event(1, "user", action="message", args={"content": "Fix the widget.", "image_urls": None}),
            event(
                2,
                "agent",
                action="run",
                args={"command": "pytest -x", "thought": "Run the tests first."},
                tool_call_metadata=tool("execute_bash", "t1", {"command": "pytest -x"}),
                message="Running command: pytest -x",
            ),
            event(
                3,
                "agent",
                observation="run",
                cause=2,
                content="1 failed",
                extras={"command": "pytest -x", "metadata": {"exit_code": 1}},
                tool_call_metadata=tool("execute_bash", "t1", {"command": "pytest -x"}),
            ),
            event(4, "agent", action="run_ipython", args={"code": "print(1)", "thought": ""}),
            event(5, "agent", observation="run_ipython", cause=4, content="1", extras={}),
            event(6, "agent", action="read", args={"path": "/w/pkg/core.py", "thought": "Look at f."}),
            event(7, "agent", observation="read", cause=6, content="def f(x): ...", extras={"path": "/w/pkg/core.py"}),
            event(8, "agent", action="edit", args={"path": "/w/pkg/core.py", "command": "str_replace", "thought": "Fix it."}),
            event(9, "agent", observation="error", content="Parameter 'command' is expected to be one of ...", extras={}),
            event(10, "agent", action="browse", args={"url": "https://docs.example/f", "thought": ""}),
            event(11, "agent", observation="browse", cause=10, content="<html>docs</html>", extras={}),
            event(12, "agent", action="think", args={"thought": "The fix holds."}),
            event(13, "agent", observation="think", cause=12, content="Your thought has been logged.", extras={}),
            event(14, "agent", action="message", args={"content": "Done, see the patch.", "wait_for_response": False}),
            event(15, "agent", action="finish", args={"final_thought": "Fixed f for x == 0.", "task_completed": "true"}),
        ]
    )
    test_result = {"git_patch": patch} if patch is not None else {}
    if resolved is not None:
        test_result["report"] = {"empty_generation": False, "resolved": resolved, "failed_apply_patch": False}
    return {
        "instance_id": instance_id,
        "instruction": "Fix the widget.",
        "history": history,
        "test_result": test_result,
        "metrics": {
            "accumulated_cost": 0.42,
            "accumulated_token_usage": {"prompt_tokens": 1000, "completion_tokens": 234},
            "response_latencies": [{"latency": 1.0}, {"latency": 2.0}, {"latency": 1.5}],
        },
        "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": "claude-x"}, "git_commit": "abc123"},
        "error": None,
        "instance": {
            "repo": "octo/widgets",
            "instance_id": instance_id,
            "base_commit": "d16bfe05a7",
            "problem_statement": f"Widget {instance_id} breaks.",
            "FAIL_TO_PASS": json.dumps(["t::a"]),
            "PASS_TO_PASS": ["t::b", "t::c"],
            "version": "0.1",
        },
        **extra,
    }


def write_jsonl(path: Path, rows, *, raw_lines=()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r) + "\n" for r in rows) + "".join(raw + "\n" for raw in raw_lines)
    path.write_text(text)
    return path


def dump_generations(dump_path, global_steps, inputs, outputs, scores, reward_extra_infos_dict, gts=None):
    """verl's RayPPOTrainer._dump_generations, with the trainer's state as arguments."""
    os.makedirs(dump_path, exist_ok=True)
    filename = os.path.join(dump_path, f"{global_steps}.jsonl")
    n = len(inputs)
    base_data = {"input": inputs, "output": outputs, "score": scores, "step": [global_steps] * n}
    if gts is not None:
        base_data = {"input": inputs, "output": outputs, "gts": gts, "score": scores, "step": [global_steps] * n}
    for k, v in reward_extra_infos_dict.items():
        if len(v) == n:
            base_data[k] = v
    lines = []
    for i in range(n):
        entry = {k: v[i] for k, v in base_data.items()}
        lines.append(json.dumps(entry, ensure_ascii=False))
    with open(filename, "w") as f:
        f.write("\n".join(lines) + "\n")
    return Path(filename)


PROMPTS = ["user\nWhat is 2+2?\nassistant\n", "user\nReverse 'abc'.\nassistant\n"]


# What the importers make of files: attempts by instance id, and the findings of one kind


def find(*paths, fmt="auto", threshold=None, step=None):
    finder = RunFinder([Source(Path(p)) for p in paths], fmt=fmt, reward_threshold=threshold, step=step).scan()
    return finder, {key: finder.attempts(key) for key in finder.instance_ids}


def reasons(finder: RunFinder, kind: str) -> dict[str, str]:
    return {f.ref: f.reason for f in finder.findings if f.kind == kind}
