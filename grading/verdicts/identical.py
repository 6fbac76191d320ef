"""Identical-patch settling: a run policy, off by default (Run.settle_identical).

When a mixed group's passing rollouts all carry the byte-identical patch (the whole diff, so
extra and scratch files included), a grader has no change to tell apart, and the run's policy
may settle the group without a model call: the worker stores a fallback verdict, status
`invalid` with ``settled_by="identical-patches"``, so the group's advantages are its baseline
ones (A* = A, as for any group that falls back, docs/method.md §2). The deterministic cheat
prescreens still run on it first (grading.jobs.grade.grade_group records them).

Such a verdict is no grader's word: a grader might still have told those rollouts apart by
their trajectories. So it is kept out of agreement, calibration and the benches
(Verdict.objects.by_graders) and its group out of the SFT export; the labeled export lists it
with its `settled_by`, and the step's status counts it apart (grading.waits.progress).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import IntegrityError

from grading.grader.workspace import GroupWorkspace
from grading.models import Group, Verdict
from grading.verdicts.store import record_verdict

SETTLED = Verdict.SettledBy.IDENTICAL_PATCHES


def identical_patches(patches: Sequence[str]) -> bool:
    """Whether these passing rollouts' patches settle their group: two or more, all the same
    text (one passing rollout alone is not "identical" to anything: a grader still tiers it)."""
    return len(patches) >= 2 and all(patch == patches[0] for patch in patches)


def settle_identical(*, group: Group, grader: str, workspace: GroupWorkspace) -> Verdict | None:
    """The settled verdict of `group` under `grader`'s name when its run's policy settles
    identical patches and its passing rollouts' patches are (stored once, like any verdict);
    None when it is to be graded."""
    if not group.run.settle_identical:
        return None
    patches = [rollout.patch for rollout in workspace.passing]
    if not identical_patches(patches):
        return None
    why = f"settled without a model call: the {len(patches)} passing rollouts' patches are byte-identical"
    try:
        verdict, _ = record_verdict(
            group=group,
            grader=grader,
            status=Verdict.Status.INVALID,
            errors=[why],
            raw={"settled": {"by": SETTLED, "passing": len(patches)}},
            settled_by=SETTLED,
        )
    except IntegrityError:  # a concurrent delivery stored it first
        verdict = Verdict.objects.get(group=group, grader=grader)
    return verdict
