"""Patch clusters are stored with the rollouts: at ingest, again when a group
grows, for groups stored before the fields existed, and they reach the labeled-groups
export and the run and step pages."""

from __future__ import annotations

import orjson
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from grading.models import Group, Project, Rollout, Run
from reviews.selectors.labeled import labeled_lines
from reviews.services.judgments import ItemInput, submit_judgment
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member

pytestmark = pytest.mark.django_db

FIX = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 0\n+y = 1\n"
FIX_SPACED = FIX.replace("+y = 1", "+y  =  1   ")
OTHER_FIX = FIX.replace("+y = 1", "+y = 2")


def new_file(path: str, body: str = "print(1)") -> str:
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{body}\n"


def group_with(patches: list[str], rewards: list[int], uid: str = "t-1@1") -> dict:
    group = small_group(uid, rewards=tuple(rewards), fail_to_pass=["tests/test_w.py::test_y"])
    for rollout, patch in zip(group["rollouts"], patches, strict=True):
        rollout["patch"] = patch
    return group


def stored(uid: str = "t-1@1") -> dict[int, tuple]:
    return {
        r.index: (r.cluster, r.extra_files, r.cluster_label) for r in Rollout.objects.filter(group__uid=uid).order_by("index")
    }


@pytest.fixture
def project():
    return Project.objects.create(name="acme")


def test_ingest_stores_clusters_extra_files_and_distinct_solutions(project):
    patches = [FIX, FIX_SPACED + new_file("debug_issue.py"), OTHER_FIX, FIX, OTHER_FIX]
    ingest_groups(project, group_with(patches, [1, 1, 1, 0, 0]))

    assert stored() == {
        0: (0, [], "same change as #1, #3"),
        1: (0, ["debug_issue.py"], "same change as #0, #3, +1 extra file"),
        2: (2, [], "same change as #4"),
        3: (0, [], "same change as #0, #1"),
        4: (2, [], "same change as #2"),
    }
    # passing rollouts 0, 1 fall in cluster 0 and 2 in cluster 2: two distinct solutions
    assert Group.objects.get().distinct_solutions == 2


def test_a_rollout_added_later_reclusters_the_whole_group(project):
    helper = new_file("w_helpers.py", "def y(): return 1")
    ingest_groups(project, group_with([FIX + helper, FIX], [1, 1]))
    # w_helpers.py is touched by one rollout only: extra, so both make the same change
    assert stored() == {0: (0, ["w_helpers.py"], "same change as #1, +1 extra file"), 1: (0, [], "same change as #0")}
    assert Group.objects.get().distinct_solutions == 1

    grown = group_with([FIX + helper, FIX, FIX + helper], [1, 1, 0])
    ingest_groups(project, grown)
    # now two rollouts add the same helper: it matters, and splits 0 and 2 from 1
    assert stored() == {0: (0, [], "same change as #2"), 1: (1, [], "unique change"), 2: (0, [], "same change as #0")}
    assert Group.objects.get().distinct_solutions == 2


def test_labeled_groups_export_carries_each_rollouts_cluster(project):
    ingest_groups(project, group_with([FIX, FIX_SPACED + new_file("FIX_SUMMARY.md", "notes"), OTHER_FIX], [1, 1, 0]))
    submit_judgment(
        reviewer=member("bob", project, "reviewer"), group=Group.objects.get(), items=[ItemInput(0, "T1"), ItemInput(1, "T2")]
    )
    run = Run.objects.get()
    [line] = list(labeled_lines(run=run))
    line = orjson.loads(orjson.dumps(line))
    assert line["distinct_solutions"] == 1
    assert [(r["index"], r["cluster"], r["extra_files"]) for r in line["rollouts"]] == [
        (0, 0, []),
        (1, 0, ["FIX_SUMMARY.md"]),
        (2, 2, []),
    ]


def test_run_and_step_pages_count_distinct_solutions(client, django_user_model, project):
    ingest_groups(
        project,
        group_with([FIX, FIX_SPACED, OTHER_FIX], [1, 1, 1], uid="a@1"),
        group_with([FIX, OTHER_FIX, FIX], [1, 1, 0], uid="b@1"),
        group_with([FIX, OTHER_FIX], [1, 0], uid="c@1"),
    )  # one pass: not counted
    user = member("ann", project, "reviewer")
    client.force_login(user)
    step = client.get("/projects/acme/runs/r1/steps/1/").content.decode()
    # a@1: 3 passes in 2 clusters; b@1: 2 passes in 2 clusters; c@1: 1 pass, 1 solution -> 5 distinct in
    # all 6 passes; 2.00 per group with two passes or more (4 in their 5 passes): every number says what it counts
    assert "6 passed · " in step
    assert "5 distinct solutions among them (2.00 per group with two passes or more: 4 in 5 passes of 2 groups)" in step
    run = client.get("/projects/acme/runs/r1/").content.decode()
    assert 'data-testid="distinct-1">2.00<' in run


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_migration_clusters_groups_stored_before_it():
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([("grading", "0013_rubric_guide")])
    apps = executor.loader.project_state([("grading", "0013_rubric_guide")]).apps
    Project, Run, Step, Task = (apps.get_model("grading", m) for m in ("Project", "Run", "Step", "Task"))
    OldGroup, OldRollout, OldContent = (apps.get_model("grading", m) for m in ("Group", "Rollout", "RolloutContent"))
    try:
        project = Project.objects.create(name="old")
        run = Run.objects.create(project=project, name="r")
        step = Step.objects.create(run=run, number=1)
        task = Task.objects.create(run=run, instance_id="t", fail_to_pass=["tests/test_w.py::test_y"])
        group = OldGroup.objects.create(run=run, step=step, task=task, uid="g", n_rollouts=3, n_passed=2, is_mixed=True)
        for index, (patch, passed) in enumerate([(FIX, True), (FIX_SPACED + new_file("debug_x.py"), True), (OTHER_FIX, False)]):
            rollout = OldRollout.objects.create(
                group=group, index=index, passed=passed, reward=float(passed), content_hash=str(index)
            )
            OldContent.objects.create(rollout=rollout, patch=patch)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())

    assert stored("g") == {
        0: (0, [], "same change as #1"),
        1: (0, ["debug_x.py"], "same change as #0, +1 extra file"),
        2: (2, [], "unique change"),
    }
    assert Group.objects.get(uid="g").distinct_solutions == 1
