"""Build a GroupWorkspace from the database (the Django side of the grader)."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from grading.grader.workspace import GroupWorkspace, RolloutView
from grading.method.project_guides import guide_for
from grading.models import Group, RolloutContent


def load_workspace(group: Group) -> GroupWorkspace:
    task = group.task
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
    checkout_root = getattr(settings, "GAGAR_CHECKOUT_ROOT", None)
    checkout = Path(checkout_root) / task.instance_id if checkout_root else None
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
        checkout_path=checkout if checkout and checkout.is_dir() else None,
        guide=guide_for(group.run.project_id),  # the project's rubric guide goes into the grader's prompt
    )
