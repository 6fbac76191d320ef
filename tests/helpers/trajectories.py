"""Crafted trajectories for the grader's tests: `trajectory(*steps)` is mini-swe-agent-1
messages, `diff(path, body)` a one-file patch, `workspace_from_group(group)` a gagar-group/1
dict as the GroupWorkspace the graders read."""

from __future__ import annotations

from grading.grader.workspace import GroupWorkspace, RolloutView


def workspace_from_group(group: dict, *, passed=None) -> GroupWorkspace:
    """A gagar-group/1 dict as a GroupWorkspace, the way load_workspace builds one from the database."""
    task = group["task"]
    rollouts = [
        RolloutView(
            index=r["index"],
            passed=(r.get("reward") == 1.0) if passed is None else passed,
            patch=r.get("patch") or "",
            messages=r.get("messages") or [],
            tests=r.get("tests") or {},
            test_log=r.get("test_log") or "",
            exit_status=r.get("exit_status") or "",
            stats=r.get("stats") or {},
        )
        for r in group["rollouts"]
    ]
    return GroupWorkspace(
        uid=group["uid"],
        instance_id=task["instance_id"],
        repo=task.get("repo", ""),
        problem_statement=task.get("problem_statement", ""),
        gold_patch=task.get("gold_patch", ""),
        fail_to_pass=list(task.get("FAIL_TO_PASS") or []),
        rollouts=rollouts,
    )


def trajectory(*steps, problem: str = "Fix the widget.") -> list[dict]:
    """mini-swe-agent-1 messages: each step is a command, or (command, output, returncode)."""
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": f"<pr_description>\n{problem}\n</pr_description>"},
    ]
    for step in steps:
        command, output, rc = (step, "", 0) if isinstance(step, str) else step
        messages.append({"role": "assistant", "content": f"THOUGHT: next.\n\n```bash\n{command}\n```"})
        messages.append({"role": "user", "content": f"<returncode>{rc}</returncode>\n<output>\n{output}\n</output>"})
    return messages


def diff(path: str, body: str, *, header: str = "@@ -10,3 +10,3 @@") -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n{header}\n{body}"
