"""Stores each group's patch clusters (grading.rollouts.clusters) on its rollouts and the
group's count of distinct passing solutions.

A group's clusters depend on all of its rollouts (a new file is "extra" when no other
rollout touches it), so they are computed for the whole group: at ingest for a new group
from the parsed patches, and again from the stored patches when rollouts are added to a
group (`recluster`). The fields are derived data, like the review queue's order: the group
page, the overview, the labeled-groups export and the step page read them, none recomputes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from grading.models import Group, Rollout, RolloutContent, Task
from grading.rollouts.clusters import PatchChanges, cluster_patches

MAX_EXTRA_STORED = 50  # extra file paths kept per rollout (the count is in the label)
MAX_PATH_STORED = 500  # characters of each


@dataclass(frozen=True)
class StoredCluster:
    cluster: int
    extra_files: list[str]
    label: str


def task_tests(task: Task) -> list[str]:
    return [str(name) for name in (task.fail_to_pass or [])] + [str(name) for name in (task.pass_to_pass or [])]


def clusters_to_store(
    task: Task, rollouts: Sequence[tuple[int, str | PatchChanges | None, bool | None]]
) -> tuple[dict[int, StoredCluster], int]:
    """(index -> what to store, distinct passing solutions) for one group's
    (index, patch or its patch_changes, passed) triples."""
    found = cluster_patches([(index, patch) for index, patch, _ in rollouts], tests=task_tests(task))
    stored = {
        r.index: StoredCluster(
            cluster=r.cluster,
            extra_files=[path[:MAX_PATH_STORED] for path in r.extra_files[:MAX_EXTRA_STORED]],
            label=r.label[:200],
        )
        for r in found.rollouts
    }
    distinct = len({stored[index].cluster for index, _, passed in rollouts if passed is True})
    return stored, distinct


def recluster(groups: Iterable[Group], *, apps=None) -> None:
    """Recompute and store the clusters of these groups from their stored patches
    (three queries for any number of groups, plus the bulk updates). `apps`: a migration's
    historical models (grading 0014 clusters the groups stored before it); the app's own
    models otherwise."""
    groups = list(groups)
    if not groups:
        return
    # A migration's historical models are typed as the app's own: they have the fields used here.
    group_model: type[Group] = apps.get_model("grading", "Group") if apps else Group
    rollout_model: type[Rollout] = apps.get_model("grading", "Rollout") if apps else Rollout
    content_model: type[RolloutContent] = apps.get_model("grading", "RolloutContent") if apps else RolloutContent
    task_model: type[Task] = apps.get_model("grading", "Task") if apps else Task
    by_id = {g.pk: g for g in groups}
    tasks = {t.pk: t for t in task_model.objects.filter(pk__in={g.task_id for g in groups}).only("fail_to_pass", "pass_to_pass")}
    patches = dict(content_model.objects.filter(rollout__group_id__in=by_id).values_list("rollout_id", "patch"))
    members: dict[int, list[Rollout]] = {}
    for rollout in rollout_model.objects.filter(group_id__in=by_id).only("id", "group_id", "index", "passed"):
        members.setdefault(rollout.group_id, []).append(rollout)
    changed: list[Rollout] = []
    for group_id, rollouts in members.items():
        group = by_id[group_id]
        stored, group.distinct_solutions = clusters_to_store(
            tasks[group.task_id], [(r.index, patches.get(r.pk, ""), r.passed) for r in rollouts]
        )
        for r in rollouts:
            r.cluster, r.extra_files, r.cluster_label = (
                stored[r.index].cluster,
                stored[r.index].extra_files,
                stored[r.index].label,
            )
            changed.append(r)
    rollout_model.objects.bulk_update(changed, ["cluster", "extra_files", "cluster_label"], batch_size=500)
    group_model.objects.bulk_update(groups, ["distinct_solutions"], batch_size=500)
