"""The group page's head: the group (its step, outcomes, signal) and its task (the problem,
the gold patch, whether its repository can be read here), and the arguments that name the
group in its pages' addresses."""

from __future__ import annotations

from dataclasses import dataclass

from grading.models import Group
from grading.registry.workspaces import has_workspace


@dataclass(frozen=True)
class GroupHead:
    uid: str
    step_number: int
    n_passed: int
    n_failed: int
    n_unknown: int
    is_mixed: bool
    in_comparison: bool  # a blind comparison's cross-run group (grading.comparisons)
    to_judge: bool  # its passing rollouts are judged: mixed, or a comparison's
    distinct_solutions: int | None


@dataclass(frozen=True)
class TaskHead:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str
    gold_patch: str
    has_workspace: bool = False  # its repository can be read here (the lanes' files views)


def group_head(group: Group) -> GroupHead:
    return GroupHead(
        uid=group.uid,
        step_number=group.step.number,
        n_passed=group.n_passed,
        n_failed=group.n_failed,
        n_unknown=group.n_unknown,
        is_mixed=group.is_mixed,
        in_comparison=group.in_comparison,
        to_judge=group.to_judge,
        distinct_solutions=group.distinct_solutions,
    )


def task_head(group: Group) -> TaskHead:
    task = group.task
    return TaskHead(
        instance_id=task.instance_id,
        repo=task.repo,
        base_commit=task.base_commit,
        problem_statement=task.problem_statement,
        gold_patch=task.gold_patch,
        has_workspace=has_workspace(task),
    )


def group_args(group: Group) -> list:
    return [group.run.project.name, group.run.name, group.uid]
