"""A stored group and its rollouts in their `gagar-group/1` shape, as they were ingested."""

from __future__ import annotations

from grading.formats.groupline import stored_rollout
from grading.models import Group, Rollout, Task


def rollout_as_line(rollout: Rollout) -> dict:
    """A stored rollout in its `gagar-group/1` shape (formats.groupline.stored_rollout)."""
    content = getattr(rollout, "content", None)
    return stored_rollout(
        index=rollout.index,
        reward=rollout.reward,
        exit_status=rollout.exit_status,
        stats=rollout.stats,
        source_format=rollout.source_format,
        source_ref=rollout.source_ref,
        patch=content.patch if content else "",
        messages=content.messages if content else [],
        tests=content.tests if content else {},
        test_log=content.test_log if content else "",
        metadata=content.metadata if content else {},
        dropped=rollout.dropped,
    )


def task_as_line(task: Task) -> dict:
    """A stored task in its `gagar-group/1` shape (a line's "task")."""
    task_out = {"instance_id": task.instance_id}
    for name, key in (
        ("repo", "repo"),
        ("base_commit", "base_commit"),
        ("problem_statement", "problem_statement"),
        ("gold_patch", "gold_patch"),
        ("test_patch", "test_patch"),
        ("fail_to_pass", "FAIL_TO_PASS"),
        ("pass_to_pass", "PASS_TO_PASS"),
    ):
        value = getattr(task, name)
        if value:
            task_out[key] = value
    task_out.update(task.extra or {})
    return task_out


def group_as_line(group: Group) -> dict:
    """The stored group in its `gagar-group/1` shape, as it was ingested."""
    rollouts = []
    for rollout in group.rollouts.select_related("content").order_by("index"):
        # Exactly the stored fields the content hash covers, so the group posted back is
        # `unchanged`; `passed` (derived from the reward) is read only, ignored on ingest.
        item = rollout_as_line(rollout)
        item["passed"] = rollout.passed
        rollouts.append(item)
    return {
        "format": "gagar-group/1",
        "run": group.run.name,
        "step": group.step.number,
        "uid": group.uid,
        "task": task_as_line(group.task),
        "rollouts": rollouts,
    }
