"""OpenHands evaluation output (`output.jsonl`, one instance per line) -> attempts. Pure.

A line is what OpenHands' SWE-bench style benchmarks write per instance (`EvalOutput`):
`instance_id`, `instance` (the dataset row: repo, base_commit, problem_statement,
FAIL_TO_PASS, PASS_TO_PASS), `history` (the event stream), `test_result.git_patch` (the
patch), `test_result.report` after evaluation (`resolved`), `metrics` (cost, token usage),
`error` and `metadata` (agent class, model).

Every event of `history` becomes one message, so the rollout shows the run as it
happened and its message count is the length of the history:
- an action (`action` set): from the agent -> `assistant` (its `system` prompt -> `system`),
  from the user -> `user`; the text is the action's own (`args.content`, `args.thought`,
  `args.final_thought`, else `message`); `action` holds what it did (the command of `run`,
  the code of `run_ipython`, `<verb> <path>` for file tools, the URL of `browse`), and
  `tool_calls` the model's tool call from `tool_call_metadata` (function name, id, arguments).
- an observation (`observation` set) -> `tool`, its `content` as the text, `tool_call_id`
  and, for commands, `returncode` (`extras.metadata.exit_code`).
- an event type OpenHands does not define (below) is kept as a message with its `message`
  text and named in the summary, never dropped.
`stats.turns` counts the agent's actions (its system prompt left out): one per LLM call.

>>> line = {"instance_id": "o__r-1", "history": [
...     {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}, "message": "Running command: ls"},
...     {"id": 2, "source": "agent", "observation": "run", "cause": 1, "content": "a.py",
...      "extras": {"metadata": {"exit_code": 0}}}],
...     "test_result": {"git_patch": ""}}
>>> a = attempt_from_line(line, ref="output.jsonl#o__r-1")
>>> [(m["role"], m.get("action"), m.get("returncode")) for m in a.messages], a.stats["turns"]
([('assistant', 'ls', None), ('tool', None, 0)], 1)
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

from grading.ingest.importers.common import (
    RESOLVED,
    UNRESOLVED,
    Attempt,
    ImportedVerdict,
    SourceError,
    as_dict,
    as_list,
    number,
    text_of,
)

FORMAT = "openhands"

# openhands/core/schema/action.py and observation.py (ActionType, ObservationType), all versions seen.
KNOWN_ACTIONS = frozenset(
    {
        "message",
        "system",
        "start",
        "read",
        "write",
        "edit",
        "run",
        "run_ipython",
        "browse",
        "browse_interactive",
        "delegate",
        "think",
        "finish",
        "reject",
        "null",
        "summarize",
        "pause",
        "resume",
        "stop",
        "change_agent_state",
        "push",
        "send_pr",
        "recall",
        "search",
        "condensation",
        "condensation_request",
        "mcp",
        "call_tool_mcp",
        "task_tracking",
        "loop_recovery",
        "add_task",
        "modify_task",
    }
)
KNOWN_OBSERVATIONS = frozenset(
    {
        "read",
        "write",
        "edit",
        "browse",
        "run",
        "run_ipython",
        "chat",
        "delegate",
        "message",
        "error",
        "success",
        "null",
        "think",
        "agent_state_changed",
        "user_rejected",
        "condense",
        "microagent",
        "recall",
        "workspace_context",
        "mcp",
        "download",
        "file_download",
        "task_tracking",
        "loop_detection",
    }
)


def is_output_line(obj: Any) -> bool:
    """An OpenHands EvalOutput line: an instance id and a history or a test result."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("instance_id"), str)
        and (isinstance(obj.get("history"), list) or isinstance(obj.get("test_result"), dict))
    )


def _tests(value: Any) -> list[str] | None:
    """F2P/P2P as the dataset row has them: a list, or (SWE-bench on the Hub) a JSON-encoded list."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return value
    return None


def task_of(line: dict[str, Any]) -> dict[str, Any]:
    """The gagar-group/1 task fields stated by `instance` (only those present and well formed)."""
    instance = as_dict(line.get("instance"))
    task: dict[str, Any] = {}
    for key, limit in (("repo", 300), ("base_commit", 100)):
        value = instance.get(key)
        if isinstance(value, str) and value.strip() and len(value) <= limit:
            task[key] = value.strip()
    statement = instance.get("problem_statement")
    if isinstance(statement, str) and statement.strip():
        task["problem_statement"] = statement
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        tests = _tests(instance.get(key))
        if tests:
            task[key] = tests
    return task


def _tool_call(event: dict[str, Any]) -> list[dict[str, Any]]:
    meta = as_dict(event.get("tool_call_metadata"))
    name, call_id = meta.get("function_name"), meta.get("tool_call_id")
    if not isinstance(name, str) or not name:
        return []
    arguments = ""
    for choice in as_list(as_dict(meta.get("model_response")).get("choices")):
        for call in as_list(as_dict(as_dict(choice).get("message")).get("tool_calls")):
            call = as_dict(call)
            if call.get("id") == call_id:
                arguments = text_of(as_dict(call.get("function")).get("arguments"))
    return [{"id": str(call_id or ""), "type": "function", "function": {"name": name, "arguments": arguments}}]


def _action_text(kind: str, args: dict[str, Any]) -> str:
    """What an action did, in one line or block: the command, the code, the file, the URL."""
    if kind == "run":
        return text_of(args.get("command")).strip()
    if kind == "run_ipython":
        return text_of(args.get("code")).strip()
    if kind in ("read", "write", "edit"):
        path = text_of(args.get("path"))
        command = text_of(args.get("command"))
        verb = command if command and kind == "edit" else kind
        return f"{verb} {path}".strip() if path else ""
    if kind in ("browse", "browse_interactive"):
        return text_of(args.get("url") or args.get("browser_actions")).strip()
    if kind in ("mcp", "call_tool_mcp"):
        return text_of(args.get("name")).strip()
    return ""


def _action_message(event: dict[str, Any], kind: str) -> dict[str, Any]:
    """The action's own text: `args.content` (messages, the system prompt), `args.final_thought`
    (finish), `args.thought` (the model's words before a tool call), else the event's `message`."""
    args = as_dict(event.get("args"))
    role = "system" if kind == "system" else ("assistant" if event.get("source") == "agent" else "user")
    content = next((text_of(args.get(key)) for key in ("content", "final_thought", "thought") if text_of(args.get(key))), "")
    message: dict[str, Any] = {"role": role, "content": content or text_of(event.get("message")), "event": kind}
    action = _action_text(kind, args)
    if action:
        message["action"] = action
    calls = _tool_call(event)
    if calls:
        message["tool_calls"] = calls
    return message


def _observation_message(event: dict[str, Any], kind: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "tool", "content": text_of(event.get("content") or event.get("message")), "event": kind}
    call_id = as_dict(event.get("tool_call_metadata")).get("tool_call_id")
    if isinstance(call_id, str) and call_id:
        message["tool_call_id"] = call_id
    exit_code = number(as_dict(as_dict(event.get("extras")).get("metadata")).get("exit_code"))
    if kind in ("run", "run_ipython") and isinstance(exit_code, int):
        message["returncode"] = exit_code
    return message


def messages_of(history: list[Any]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """(one message per event, count of each event type OpenHands does not define)."""
    messages: list[dict[str, Any]] = []
    unseen: Counter[str] = Counter()
    for event in history:
        if not isinstance(event, dict):
            unseen["not an object"] += 1
            messages.append({"role": "unknown", "content": text_of(event)})
            continue
        action, observation = event.get("action"), event.get("observation")
        if isinstance(action, str) and action in KNOWN_ACTIONS:
            messages.append(_action_message(event, action))
        elif isinstance(observation, str) and observation in KNOWN_OBSERVATIONS:
            messages.append(_observation_message(event, observation))
        else:
            label = (
                f"action {action!r}"
                if action is not None
                else f"observation {observation!r}"
                if observation is not None
                else "no action or observation"
            )
            unseen[label] += 1
            role = (
                "assistant"
                if event.get("source") == "agent" and action is not None
                else "tool"
                if observation is not None
                else "user"
            )
            messages.append(
                {
                    "role": role,
                    "content": text_of(event.get("message") or event.get("content")),
                    "event": str(action or observation or "unknown")[:100],
                }
            )
    return messages, unseen


def verdict_of(line: dict[str, Any], *, ref: str) -> ImportedVerdict | None:
    """`test_result.report.resolved` (OpenHands' eval_infer writes it), or None when the line was not evaluated."""
    report = as_dict(as_dict(line.get("test_result")).get("report"))
    resolved = report.get("resolved")
    if not isinstance(resolved, bool):
        return None
    return ImportedVerdict(
        status=RESOLVED if resolved else UNRESOLVED,
        source="report",
        ref=ref,
        rule="test_result.report.resolved in the output line",
    )


def attempt_from_line(line: dict[str, Any], *, ref: str) -> Attempt:
    """One output.jsonl line -> one attempt; `unseen` event types are in `metadata.unknown_events`."""
    if not is_output_line(line):
        raise SourceError("not an OpenHands output line (needs instance_id and history or test_result)")
    history = line.get("history")
    if history is not None and not isinstance(history, list):
        raise SourceError("history must be a list of events")
    messages, unseen = messages_of(history or [])
    test_result = as_dict(line.get("test_result"))
    patch = test_result.get("git_patch")
    metrics = as_dict(line.get("metrics"))
    usage = as_dict(metrics.get("accumulated_token_usage"))
    prompt, completion = number(usage.get("prompt_tokens")), number(usage.get("completion_tokens"))
    latencies = metrics.get("response_latencies")
    metadata_in = as_dict(line.get("metadata"))
    model = as_dict(metadata_in.get("llm_config")).get("model")
    metadata: dict[str, Any] = {
        key: value
        for key, value in (
            ("agent", metadata_in.get("agent_class")),
            ("model", model),
            ("openhands_commit", metadata_in.get("git_commit")),
        )
        if isinstance(value, str) and value
    }
    if unseen:
        metadata["unknown_events"] = dict(sorted(unseen.items()))
    error = line.get("error")
    finished = any(m.get("event") == "finish" for m in messages)
    exit_status = text_of(error).strip() if error else ("finish" if finished else "")
    task = task_of(line)
    return Attempt(
        instance_id=line["instance_id"],
        ref=ref,
        format=FORMAT,
        patch=patch if isinstance(patch, str) else "",
        messages=messages,
        exit_status=exit_status[:100],
        stats={
            "tokens": int(prompt + completion) if prompt is not None and completion is not None else None,
            "cost_usd": number(metrics.get("accumulated_cost")),
            "api_calls": len(latencies) if isinstance(latencies, list) else None,
            "turns": sum(1 for m in messages if m["role"] == "assistant"),
        },
        metadata=metadata,
        problem_statement=task.get("problem_statement", ""),
        own_verdict=verdict_of(line, ref=ref),
        task=task,
    )
