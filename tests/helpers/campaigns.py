"""The groups the campaigns API and page tests grade: in run r1, three mixed groups (two in
step 1, one in step 2) and an all-pass group no campaign grades."""

from __future__ import annotations

from grading.models import Group, Project
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups


def campaign_groups(project: Project) -> dict[str, Group]:
    """Store them in `project`; they are returned by uid."""
    ingest_groups(
        project,
        small_group("a@1", rewards=(1, 0, 1)),
        small_group("b@1", instance_id="t-2", rewards=(1, 0)),
        small_group("all-pass@1", instance_id="t-3", rewards=(1, 1)),
        small_group("c@2", instance_id="t-4", step=2, rewards=(0, 1)),
    )
    return {g.uid: g for g in Group.objects.filter(run__project=project)}
