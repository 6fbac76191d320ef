"""mini-swe-agent trajectories (`mini-swe-agent-1` and `-1.1`) -> `gagar-group/1` rollouts.

Pure: takes the decoded trajectory and, when there is one, the SWE-bench verdict of the
instance. Without a verdict the reward is unknown (None) — never guessed from the
exit status — except for an empty patch, which the harness always fails.

Every message of the file becomes one message of the rollout (so turn counts match the
file), with the parts the group page shows pulled out:
- `mini-swe-agent-1`: `{role, content}`; the command is the fenced bash block of the
  assistant message; observations come back as `user` messages.
- `mini-swe-agent-1.1`: the model's own message plus `extra`; commands are in
  `extra.actions` (and `tool_calls` for tool-calling models), observations are `tool`
  messages (or `user` for text-based models), and an `exit` message closes the run.
The model's reasoning (`reasoning_content`, or the `reasoning` of the raw response kept
in `extra.response`) becomes the turn's `thought`. The rest of `extra` (raw responses,
timestamps) is dropped: it repeats the content and would double the storage.

>>> traj = {"trajectory_format": "mini-swe-agent-1", "instance_id": "o__r-1",
...         "info": {"exit_status": "Submitted", "submission": ""},
...         "messages": [{"role": "assistant", "content": "THOUGHT: look\\n```bash\\nls\\n```"}]}
>>> a = attempt_from_trajectory(traj, ref="run/o__r-1.traj.json")
>>> a.messages[0]["action"], a.rollout(verdict=None)["reward"]
('ls', 0.0)
"""

from __future__ import annotations

import re
from typing import Any

from grading.ingest.importers.common import (
    Attempt,
    SourceError,
    as_dict,
    as_list,
    number,
    problem_statement_of,
    text_of,
    verdict_from_report,
)

FORMAT_V1 = "mini-swe-agent-1"
FORMAT_V11 = "mini-swe-agent-1.1"
# Blanks up to the line end, not `\s*\n` (which backtracks over a run of newlines: O(N^2)).
_FENCED_BASH = re.compile(r"```(?:bash|sh|mswea_bash_command)[^\S\n]*\n(.*?)```", re.DOTALL)


def is_trajectory(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        return False
    fmt = obj.get("trajectory_format")
    if isinstance(fmt, str):
        return fmt.startswith("mini-swe-agent")
    return "trajectory" not in obj and "history" not in obj and isinstance(obj.get("info"), dict)


def report_for(instance_id: str, report: dict[str, Any] | None) -> dict[str, Any] | None:
    """SWE-bench report.json is either {instance_id: {...}} or the bare object."""
    if not isinstance(report, dict):
        return None
    if "resolved" in report or "tests_status" in report:
        return report
    inner = report.get(instance_id)
    return inner if isinstance(inner, dict) else None


def _reasoning(raw: dict[str, Any]) -> str:
    for key in ("reasoning_content", "reasoning"):
        text = text_of(raw.get(key))
        if text:
            return text
    response = as_dict(as_dict(raw.get("extra")).get("response"))
    choices = as_list(response.get("choices"))
    if choices:
        message = as_dict(as_dict(choices[0]).get("message"))
        for key in ("reasoning_content", "reasoning"):
            text = text_of(message.get(key))
            if text:
                return text
    return ""


def _tool_calls(raw: Any) -> list[dict[str, Any]]:
    calls = []
    for call in as_list(raw):
        if not isinstance(call, dict):
            continue
        fn = as_dict(call.get("function"))
        calls.append(
            {
                "id": str(call.get("id") or ""),
                "type": str(call.get("type") or "function"),
                "function": {"name": str(fn.get("name") or call.get("name") or ""), "arguments": text_of(fn.get("arguments"))},
            }
        )
    return calls


def _message(raw: dict[str, Any]) -> dict[str, Any]:
    role = raw.get("role") if isinstance(raw.get("role"), str) else "unknown"
    message: dict[str, Any] = {"role": role, "content": text_of(raw.get("content"))}
    extra = as_dict(raw.get("extra"))
    if role == "assistant":
        actions = as_list(extra.get("actions"))
        if actions:  # mini-swe-agent-1.1 keeps the parsed actions
            commands = [a.get("command") if isinstance(a, dict) else a for a in actions]
            action = "\n".join(str(c) for c in commands if c)
        else:
            match = _FENCED_BASH.search(message["content"])
            action = match.group(1).strip() if match else ""
        if action:
            message["action"] = action
        thought = _reasoning(raw)
        if thought:
            message["thought"] = thought
    calls = _tool_calls(raw.get("tool_calls"))
    if calls:
        message["tool_calls"] = calls
    if isinstance(raw.get("tool_call_id"), str):
        message["tool_call_id"] = raw["tool_call_id"]
    if role in ("tool", "user") and isinstance(number(extra.get("returncode")), int):
        message["returncode"] = extra["returncode"]
    return message


def _tokens(messages: list[Any]) -> int | None:
    total, seen = 0, False
    for raw in messages:
        usage = as_dict(as_dict(as_dict(raw).get("extra")).get("response")).get("usage") or as_dict(raw).get("usage")
        tokens = number(as_dict(usage).get("total_tokens"))
        if tokens is not None:
            total += int(tokens)
            seen = True
    return total if seen else None


def attempt_from_trajectory(traj: dict[str, Any], *, ref: str, instance_id: str | None = None) -> Attempt:
    if not is_trajectory(traj):
        raise SourceError("not a mini-swe-agent trajectory (no messages / trajectory_format)")
    info = as_dict(traj.get("info"))
    raw_messages = [m for m in traj["messages"] if isinstance(m, dict)]
    if len(raw_messages) != len(traj["messages"]):
        raise SourceError("messages must all be objects")
    messages = [_message(m) for m in raw_messages]
    submission = info.get("submission")
    exit_status = info.get("exit_status")
    fmt = traj.get("trajectory_format")
    if not isinstance(fmt, str):
        fmt = FORMAT_V1
    model_stats = as_dict(info.get("model_stats"))
    config = as_dict(info.get("config"))
    model = as_dict(config.get("model")).get("model_name")
    first_user = next((m["content"] for m in messages if m["role"] == "user"), "")
    metadata = {
        key: value
        for key, value in (("mini_version", info.get("mini_version")), ("model", model), ("agent", config.get("agent_type")))
        if isinstance(value, str) and value
    }
    return Attempt(
        instance_id=instance_id or str(traj.get("instance_id") or ""),
        ref=ref,
        format=fmt,
        patch=submission if isinstance(submission, str) else "",
        messages=messages,
        exit_status=str(exit_status or "")[:100],
        stats={
            "tokens": _tokens(raw_messages),
            "cost_usd": number(model_stats.get("instance_cost")),
            "api_calls": number(model_stats.get("api_calls")),
            "turns": sum(1 for m in messages if m["role"] == "assistant"),
        },
        metadata=metadata,
        problem_statement=problem_statement_of(first_user),
        unfinished=not exit_status and not isinstance(submission, str),
    )


def rollout_from_trajectory(traj: dict[str, Any], *, index: int, report: dict[str, Any] | None, ref: str) -> dict[str, Any]:
    """One trajectory and its report.json body (keyed or bare) -> a rollout with `index`."""
    attempt = attempt_from_trajectory(traj, ref=ref)
    body = report_for(attempt.instance_id, report)
    verdict = verdict_from_report(body, ref="report.json") if body is not None else None
    return {"index": index, **attempt.rollout(verdict=verdict)}
