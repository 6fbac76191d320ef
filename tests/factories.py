"""Rows built directly, with sensible defaults, for unit tests of selectors and presenters.

A selector test builds the rows it reads; it does not go through ingest (tests/helpers/ingest.py)
or the grading services, which the tests of those services cover. Each factory creates what it
needs and was not given: `make_group()` alone makes project acme, run r1, step 1, the task and
the rollouts. The denormalised fields ingest keeps (a group's counts and `is_mixed`, a step's
number on its groups, `has_valid_verdict`) are filled in the same way here, so the rows look
like stored ones; anything else a test sets itself (`**fields`).

    group = make_group(rewards=(1, 0, 1))            # acme / r1 / step 1 / t-1@1, three rollouts
    verdict = make_verdict(group, tiers={0: "T1", 2: "T2"})
    make_judgment(group, make_user("bob"), tiers={0: "T2", 2: "T1"})
"""

from __future__ import annotations

import hashlib

from django.contrib.auth import get_user_model

from grading.models import Group, Project, Rollout, RolloutContent, RolloutGrade, Run, Step, Task, Verdict
from reviews.models import Assignment, Judgment, JudgmentItem


def make_user(username: str = "bob"):
    """A user whose password is `<username>-pass-123`, as tests.helpers.people.member makes them."""
    return get_user_model().objects.create_user(username=username, password=f"{username}-pass-123")


def make_project(name: str = "acme", **fields) -> Project:
    return Project.objects.get_or_create(name=name, defaults=fields)[0]


def make_run(project: Project | None = None, name: str = "r1", **fields) -> Run:
    project = project or make_project()
    return Run.objects.get_or_create(project=project, name=name, defaults=fields)[0]


def make_step(run: Run | None = None, number: int = 1, **fields) -> Step:
    run = run or make_run()
    return Step.objects.get_or_create(run=run, number=number, defaults=fields)[0]


def make_task(run: Run | None = None, instance_id: str = "t-1", **fields) -> Task:
    run = run or make_run()
    fields = {"repo": "octo/widgets", "problem_statement": "Fix the widget.", **fields}
    return Task.objects.get_or_create(run=run, instance_id=instance_id, defaults=fields)[0]


def make_group(
    uid: str = "t-1@1",
    *,
    step: Step | None = None,
    task: Task | None = None,
    rewards=(1, 0, 1),
    rollouts: dict[int, dict] | None = None,
    **fields,
) -> Group:
    """A group of `step` (default: step 1 of run r1 in acme) with one rollout per reward
    (`rollouts`: {index: fields} for any of them), its counts filled in as ingest fills them."""
    step = step or make_step()
    task = task or make_task(step.run, uid.rsplit("@", 1)[0])
    passed = [None if r is None else r == 1 for r in rewards]
    n_passed, n_failed = passed.count(True), passed.count(False)
    counts = {
        "n_rollouts": len(rewards),
        "n_passed": n_passed,
        "n_unknown": passed.count(None),
        "is_mixed": n_passed > 0 and n_failed > 0,
        "step_number": step.number,
    }
    group = Group.objects.create(run=step.run, step=step, task=task, uid=uid, **{**counts, **fields})
    for index, reward in enumerate(rewards):
        make_rollout(group, index, reward=reward, **(rollouts or {}).get(index, {}))
    return group


def make_rollout(group: Group, index: int = 0, *, reward: float | None = 1, patch: str = "", messages=(), **fields) -> Rollout:
    """A rollout and its content (`patch`, `messages`); `passed` follows `reward`."""
    fields = {"passed": None if reward is None else reward == 1, "n_messages": len(messages), **fields}
    digest = hashlib.sha256(f"{group.pk}/{index}/{reward}/{patch}".encode()).hexdigest()
    rollout = Rollout.objects.create(group=group, index=index, reward=reward, content_hash=digest, **fields)
    RolloutContent.objects.create(rollout=rollout, patch=patch, messages=list(messages))
    return rollout


def make_verdict(
    group: Group, *, grader: str = "test-grader@1", status: str = Verdict.Status.VALID, tiers: dict | None = None, **fields
) -> Verdict:
    """A verdict and one grade per entry of `tiers` ({index: tier}, ranked in that order, or
    {index: (tier, rank)}); a valid one sets the group's `has_valid_verdict`."""
    verdict = Verdict.objects.create(group=group, grader=grader, status=status, **fields)
    for rank, (index, tier) in enumerate((tiers or {}).items(), 1):
        tier, rank = tier if isinstance(tier, tuple) else (tier, rank)
        make_grade(verdict, group.rollouts.get(index=index), tier=tier, rank=rank)
    if status == Verdict.Status.VALID and not group.has_valid_verdict:
        group.has_valid_verdict = True
        group.save(update_fields=["has_valid_verdict"])
    return verdict


def make_grade(verdict: Verdict, rollout: Rollout, *, tier: str = "T1", rank: int = 1, **fields) -> RolloutGrade:
    return RolloutGrade.objects.create(verdict=verdict, rollout=rollout, tier=tier, rank=rank, **fields)


def make_assignment(group: Group, reviewer, *, blind: bool = True, status: str = Assignment.Status.OPEN, **fields) -> Assignment:
    """An assignment of `group` to `reviewer`, open and blind unless told; its lane order is
    the rollouts' indexes unless `order` is given."""
    fields.setdefault("order", list(group.rollouts.values_list("index", flat=True)))
    return Assignment.objects.create(group=group, reviewer=reviewer, blind=blind, status=status, **fields)


def make_judgment(group: Group, reviewer, *, tiers: dict | None = None, **fields) -> Judgment:
    """A judgment with one item per entry of `tiers` ({index: tier}, ranked in that order, or
    {index: (tier, rank)})."""
    judgment = Judgment.objects.create(group=group, reviewer=reviewer, **fields)
    for rank, (index, tier) in enumerate((tiers or {}).items(), 1):
        tier, rank = tier if isinstance(tier, tuple) else (tier, rank)
        JudgmentItem.objects.create(judgment=judgment, rollout=group.rollouts.get(index=index), tier=tier, rank=rank)
    return judgment
