"""Build a GroupWorkspace from the database (the Django side of the grader)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from grading.grader.workspace import GroupWorkspace, RolloutView
from grading.method.guide import Guide
from grading.method.project_guides import guide_for
from grading.models import Group, RolloutContent


def load_workspace(group: Group) -> GroupWorkspace:
    contents = {c.rollout_id: c for c in RolloutContent.objects.filter(rollout__group=group)}
    rollouts = []
    for rollout in group.rollouts.order_by("index"):
        content = contents.get(rollout.pk) or RolloutContent()
        rollouts.append(
            RolloutView(
                index=rollout.index,
                passed=rollout.passed,
                patch=content.patch,
                messages=content.messages or [],
                tests=content.tests or {},
                test_log=content.test_log,
                exit_status=rollout.exit_status,
                stats=rollout.stats,
            )
        )
    return workspace_for(group, rollouts, guide=guide_for(group.run.project_id))


def checkout_path(instance_id: str) -> Path | None:
    """The task's checkout under GAGAR_CHECKOUT_ROOT, if one is laid out there: with it the grader
    offers read_file and get_task says has_checkout."""
    root = getattr(settings, "GAGAR_CHECKOUT_ROOT", None)
    checkout = Path(root) / instance_id if root else None
    return checkout if checkout and checkout.is_dir() else None


def workspace_for(group: Group, rollouts: list[RolloutView], *, guide: Guide) -> GroupWorkspace:
    """The grader's workspace of `group` (its task read from `group.task`) around `rollouts`:
    the one place a GroupWorkspace is assembled, for the live grader and the SFT export alike."""
    task = group.task
    return GroupWorkspace(
        uid=group.uid,
        instance_id=task.instance_id,
        repo=task.repo,
        base_commit=task.base_commit,
        problem_statement=task.problem_statement,
        gold_patch=task.gold_patch,
        test_patch=task.test_patch,
        fail_to_pass=list(task.fail_to_pass or []),
        pass_to_pass=list(task.pass_to_pass or []),
        rollouts=rollouts,
        checkout_path=checkout_path(task.instance_id),
        guide=guide,  # the project's rubric guide goes into the grader's prompt
    )
