"""The migrations that store the review queue's order fill it in for groups stored before them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("grading", "0010_mapping_version_per_project"), ("reviews", "0001_initial")]
AFTER = [("grading", "0011_group_review_queue_order"), ("reviews", "0002_group_awaits_review")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def back_to_latest():
    """Leave the schema as every other test expects it, whatever migrations come after these."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
@pytest.mark.slow
def test_existing_groups_get_step_number_verdict_flag_credit_and_review_state():
    apps = migrate(BEFORE)
    User = apps.get_model("auth", "User")
    Project, Run, Step, Task = (apps.get_model("grading", m) for m in ("Project", "Run", "Step", "Task"))
    Group, Rollout, Verdict = (apps.get_model("grading", m) for m in ("Group", "Rollout", "Verdict"))
    FactorMapping, AdvantageResult = apps.get_model("grading", "FactorMapping"), apps.get_model("grading", "AdvantageResult")
    MappingActivation = apps.get_model("grading", "MappingActivation")
    Assignment, ReviewPolicy = apps.get_model("reviews", "Assignment"), apps.get_model("reviews", "ReviewPolicy")

    project = Project.objects.create(name="acme")
    ReviewPolicy.objects.create(project=project, overlap=0.0)
    run = Run.objects.create(project=project, name="r1")
    other_run = Run.objects.create(project=project, name="r2")
    # Made by a data migration; a transactional test before this one may have flushed it.
    default = FactorMapping.objects.filter(
        name="default", version=1, project__isnull=True
    ).first() or FactorMapping.objects.create(name="default", version=1, source="default", bands={})
    steep = FactorMapping.objects.create(project=project, name="steep", version=1, bands={})
    MappingActivation.objects.create(run=other_run, mapping=steep)
    groups = {}
    for r, number in ((run, 7), (other_run, 3)):
        step = Step.objects.create(run=r, number=number)
        task = Task.objects.create(run=r, instance_id="t")
        for uid in ("a", "b"):
            groups[(r.name, uid)] = Group.objects.create(run=r, step=step, task=task, uid=uid, is_mixed=True)
    now = timezone.now()

    def result(group, mapping, index, a, a_star):
        rollout = Rollout.objects.create(group=group, index=index, reward=1.0, passed=True, content_hash=str(index))
        AdvantageResult.objects.create(
            rollout=rollout,
            mapping=mapping,
            step=group.step,
            run_name=group.run.name,
            step_number=group.step.number,
            uid=group.uid,
            index=index,
            instance_id="t",
            baseline="mean",
            advantage=a,
            factor=1,
            lambda_value=1,
            redistributed_advantage=a_star,
            discount_only_advantage=a,
            mapping_label="m",
            status="graded",
            computed_at=now,
        )

    a1 = groups[("r1", "a")]
    result(a1, default, 0, 0.5, 0.8)
    result(a1, default, 1, 0.5, 0.2)
    result(a1, steep, 2, 0.5, 2.5)  # another mapping's row: not r1's active one
    b2 = groups[("r2", "b")]
    result(b2, steep, 0, 0.25, 0.0)
    result(b2, default, 1, 0.25, 5.0)  # r2's active mapping is steep
    Verdict.objects.create(group=a1, grader="g@1", status="valid")
    Verdict.objects.create(group=groups[("r1", "b")], grader="g@1", status="invalid")
    alice = User.objects.create(username="alice")
    Assignment.objects.create(group=b2, reviewer=alice, status="submitted")
    Assignment.objects.create(group=groups[("r2", "a")], reviewer=alice, status="skipped")

    apps = migrate(AFTER)
    stored = {(g.run.name, g.uid): g for g in apps.get_model("grading", "Group").objects.select_related("run")}
    assert {k: g.step_number for k, g in stored.items()} == {("r1", "a"): 7, ("r1", "b"): 7, ("r2", "a"): 3, ("r2", "b"): 3}
    assert {k for k, g in stored.items() if g.has_valid_verdict} == {("r1", "a")}
    assert stored[("r1", "a")].credit_moved == pytest.approx(0.6)
    assert stored[("r2", "b")].credit_moved == pytest.approx(0.25)
    assert stored[("r1", "b")].credit_moved == stored[("r2", "a")].credit_moved == 0.0
    # Overlap 0: one submitted review is all a group wants; a skip holds no slot.
    assert {k for k, g in stored.items() if not g.awaits_review} == {("r2", "b")}
