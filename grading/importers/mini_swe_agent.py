"""mini-swe-agent trajectories (`mini-swe-agent-1` and `-1.1`) -> `gagar-group/1` rollouts.

Pure: takes the decoded trajectory and, when there is one, the SWE-bench report of the
instance. Without a report the reward is unknown (None) — never guessed from the
exit status.
"""

from __future__ import annotations

import re
from typing import Any

_FENCED_BASH = re.compile(r"```(?:bash|sh)\s*\n(.*?)```", re.DOTALL)


def report_for(instance_id: str, report: dict | None) -> dict | None:
    """SWE-bench report.json is either {instance_id: {...}} or the bare object."""
    if not isinstance(report, dict):
        return None
    if "resolved" in report or "tests_status" in report:
        return report
    inner = report.get(instance_id)
    return inner if isinstance(inner, dict) else None


def _message(raw: dict) -> dict:
    role = raw.get("role", "unknown")
    content = raw.get("content", "")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    message: dict[str, Any] = {"role": role, "content": content if isinstance(content, str) else str(content)}
    extra = raw.get("extra") if isinstance(raw.get("extra"), dict) else {}
    actions = extra.get("actions") if isinstance(extra.get("actions"), list) else None
    if role == "assistant":
        if actions:  # mini-swe-agent-1.1 keeps parsed actions
            commands = [a.get("command") if isinstance(a, dict) else str(a) for a in actions]
            message["action"] = "\n".join(c for c in commands if c)
        else:
            match = _FENCED_BASH.search(message["content"])
            if match:
                message["action"] = match.group(1).strip()
    if raw.get("tool_calls"):
        message["tool_calls"] = raw["tool_calls"]
    if raw.get("tool_call_id"):
        message["tool_call_id"] = raw["tool_call_id"]
    return message


def rollout_from_trajectory(traj: dict, *, index: int, report: dict | None, ref: str) -> dict:
    instance_id = traj.get("instance_id", "")
    info = traj.get("info") if isinstance(traj.get("info"), dict) else {}
    messages = [_message(m) for m in traj.get("messages", []) if isinstance(m, dict)]
    verdict = report_for(instance_id, report)
    reward = None if verdict is None else (1.0 if verdict.get("resolved") is True else 0.0)
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    rollout: dict[str, Any] = {
        "index": index,
        "reward": reward,
        "patch": info.get("submission") or "",
        "messages": messages,
        "exit_status": str(info.get("exit_status") or ""),
        "stats": {
            "cost_usd": stats.get("instance_cost"),
            "api_calls": stats.get("api_calls"),
            "turns": sum(1 for m in messages if m["role"] == "assistant"),
        },
        "source": {"format": traj.get("trajectory_format") or "mini-swe-agent-1", "ref": ref},
        "metadata": {"mini_version": info.get("mini_version")} if info.get("mini_version") else {},
    }
    if verdict is not None and isinstance(verdict.get("tests_status"), dict):
        rollout["tests"] = {
            k: {"success": list(v.get("success", [])), "failure": list(v.get("failure", []))}
            for k, v in verdict["tests_status"].items()
            if isinstance(v, dict)
        }
    return rollout
