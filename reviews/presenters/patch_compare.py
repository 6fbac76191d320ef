"""The group page's "Compare patches" box: one rollout's patch against another's, or
against the task's gold patch, each named as this person names the rollouts."""

from __future__ import annotations

from dataclasses import dataclass

from grading.models import Group, RolloutContent
from grading.rollouts.patch_compare import compare_patches
from reviews.selectors.lanes import lanes_for


@dataclass(frozen=True)
class PatchComparison:
    files: tuple
    label_a: str
    label_b: str

    def context(self) -> dict:
        return {"files": self.files, "label_a": self.label_a, "label_b": self.label_b}


def patch_comparison(*, user, group: Group, a: str, b: str) -> PatchComparison | None:
    """Patch `a` against patch `b` (a lane key, or "gold"); None unless both name a patch
    of this group. A blind judge compares C with A (reviews.selectors.lanes)."""
    stored = dict(RolloutContent.objects.filter(rollout__group=group).values_list("rollout__index", "patch"))
    lanes = lanes_for(user=user, group=group, indexes=list(stored))
    patches = {lanes.key(index): patch for index, patch in stored.items()}
    labels = {lanes.key(index): lanes.name(index) for index in stored}
    if group.task.gold_patch:
        patches["gold"], labels["gold"] = group.task.gold_patch, "gold patch"
    if a not in patches or b not in patches:
        return None
    return PatchComparison(files=tuple(compare_patches(patches[a], patches[b])), label_a=labels[a], label_b=labels[b])
