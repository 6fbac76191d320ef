"""SWE-agent `.traj` files -> attempts (one per entry of `attempts`, else one). Pure.

A `.traj` holds `trajectory[]` (per step: response, thought, action, observation),
`history[]` (the conversation the model saw: role, content, and for the agent's turns
thought, action and tool_calls) and `info` (submission, exit_status, model_stats). With
a retry loop it also holds `attempts[]`, each a full trajectory of its own; the top level
then repeats the attempt the loop chose, whose submission is the one that was evaluated.

Messages come from `history` (demonstrations left out: they are the same canned example
in every file); a file without history falls back to one assistant message per
trajectory step carrying its thought, action and observation.

>>> traj = {"trajectory": [{"response": "r", "thought": "t", "action": "ls", "observation": "a.py"}],
...         "info": {"submission": "diff --git a/a.py b/a.py\\n", "exit_status": "submitted"}}
>>> [a.messages[0]["action"] for a in attempts_from_traj(traj, ref="x.traj", instance_id="o__r-1")]
['ls']
"""

from __future__ import annotations

from typing import Any

import orjson

from grading.ingest.importers.common import (
    Attempt,
    SourceError,
    as_dict,
    as_list,
    number,
    problem_statement_of,
    text_of,
)
from grading.ingest.importers.mini_swe_agent import _tool_calls

FORMAT = "swe-agent"


def is_trajectory(obj: Any) -> bool:
    return isinstance(obj, dict) and (
        isinstance(obj.get("trajectory"), list) or isinstance(obj.get("attempts"), list) or isinstance(obj.get("history"), list)
    )


def _history_message(item: dict[str, Any]) -> dict[str, Any]:
    role = item.get("role") if isinstance(item.get("role"), str) else "unknown"
    message: dict[str, Any] = {"role": role, "content": text_of(item.get("content"))}
    for key in ("thought", "action"):
        text = text_of(item.get(key))
        if text and role == "assistant":
            message[key] = text.strip() if key == "action" else text
    calls = _tool_calls(item.get("tool_calls"))
    if calls:
        message["tool_calls"] = calls
    ids = as_list(item.get("tool_call_ids"))
    if role == "tool" and ids and isinstance(ids[0], str):
        message["tool_call_id"] = ids[0]
    if isinstance(item.get("message_type"), str):
        message["message_type"] = item["message_type"]
    return message


def _step_message(step: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text_of(step.get("response"))}
    for key in ("thought", "action", "observation"):
        text = text_of(step.get(key))
        if text:
            message[key] = text.strip() if key == "action" else text
    return message


def _problem_statement(data: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    replay = data.get("replay_config")
    if isinstance(replay, str):
        try:
            replay = orjson.loads(replay)
        except orjson.JSONDecodeError:
            replay = None
    statement = as_dict(as_dict(replay).get("problem_statement")).get("text")
    if isinstance(statement, str) and statement.strip():
        return statement.strip()
    first_user = next((m["content"] for m in messages if m["role"] == "user" and m.get("message_type") != "demonstration"), "")
    return problem_statement_of(first_user)


def _attempt(
    data: dict[str, Any],
    *,
    ref: str,
    instance_id: str,
    pred_patch: str | None,
    evaluated_patch: str | None,
    ambiguous: bool = False,
) -> Attempt:
    info = as_dict(data.get("info"))
    history = [h for h in as_list(data.get("history")) if isinstance(h, dict)]
    demos = sum(1 for h in history if h.get("is_demo"))
    if history:
        messages = [_history_message(h) for h in history if not h.get("is_demo")]
    else:
        messages = [_step_message(s) for s in as_list(data.get("trajectory")) if isinstance(s, dict)]
    submission = info.get("submission")
    if not isinstance(submission, str) and pred_patch is not None:
        submission = pred_patch
    exit_status = info.get("exit_status")
    model_stats = as_dict(info.get("model_stats"))
    sent, received = number(model_stats.get("tokens_sent")), number(model_stats.get("tokens_received"))
    metadata: dict[str, Any] = {
        key: value for key, value in (("swe_agent_version", info.get("swe_agent_version")),) if isinstance(value, str) and value
    }
    if demos:
        metadata["demonstration_messages_left_out"] = demos
    return Attempt(
        instance_id=instance_id,
        ref=ref,
        format=FORMAT,
        patch=submission if isinstance(submission, str) else "",
        messages=messages,
        exit_status=str(exit_status or "")[:100],
        stats={
            "tokens": int(sent + received) if sent is not None and received is not None else None,
            "cost_usd": number(model_stats.get("instance_cost")),
            "api_calls": number(model_stats.get("api_calls")),
            "turns": sum(1 for m in messages if m["role"] == "assistant"),
        },
        metadata=metadata,
        problem_statement=_problem_statement(data, messages),
        evaluated_patch=evaluated_patch,
        verdict_ambiguous=ambiguous,
        unfinished=not exit_status and not isinstance(submission, str),
    )


def attempts_from_traj(traj: dict[str, Any], *, ref: str, instance_id: str, pred_patch: str | None = None) -> list[Attempt]:
    """All attempts of one `.traj`; `pred_patch` is the sibling `.pred`'s model_patch, if any.

    With `attempts`, the evaluated patch is the top-level submission (the chosen attempt's);
    a verdict then holds only for attempts that submitted that same patch.
    """
    if not is_trajectory(traj):
        raise SourceError("not a SWE-agent trajectory (no trajectory / history / attempts)")
    raw_attempts = [a for a in as_list(traj.get("attempts")) if isinstance(a, dict)]
    if not raw_attempts:
        return [_attempt(traj, ref=ref, instance_id=instance_id, pred_patch=pred_patch, evaluated_patch=None)]
    chosen = as_dict(traj.get("info")).get("submission")
    evaluated = pred_patch if pred_patch is not None else (chosen if isinstance(chosen, str) else None)
    return [
        _attempt(
            attempt,
            ref=f"{ref}#attempt-{n}",
            instance_id=instance_id,
            pred_patch=None,
            evaluated_patch=evaluated,
            ambiguous=evaluated is None and len(raw_attempts) > 1,
        )
        for n, attempt in enumerate(raw_attempts)
    ]
