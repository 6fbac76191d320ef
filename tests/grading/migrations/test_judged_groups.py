"""The migration that adds Group.to_judge keeps every stored group where it was: a mixed group
is judged, an all-pass or all-fail one is not; and the database keeps the flag from then on."""

from __future__ import annotations

import pytest

from tests.grading.migrations.test_queue_order import back_to_latest, migrate  # noqa: F401  (a fixture)

BEFORE = [("grading", "0044_uncited_judgments")]
AFTER = [("grading", "0045_judged_groups")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
@pytest.mark.slow
def test_stored_groups_keep_their_state_and_a_comparison_group_is_judged():
    apps = migrate(BEFORE)
    Project, Run, Step, Task, Group = (apps.get_model("grading", m) for m in ("Project", "Run", "Step", "Task", "Group"))
    run = Run.objects.create(project=Project.objects.create(name="acme"), name="r1")
    step = Step.objects.create(run=run, number=1)
    task = Task.objects.create(run=run, instance_id="t")
    for uid, mixed, passed in (("mixed", True, 2), ("all-pass", False, 4), ("all-fail", False, 0)):
        Group.objects.create(run=run, step=step, task=task, uid=uid, is_mixed=mixed, n_rollouts=4, n_passed=passed)

    apps = migrate(AFTER)
    Group = apps.get_model("grading", "Group")
    assert dict(Group.objects.values_list("uid", "to_judge")) == {"mixed": True, "all-pass": False, "all-fail": False}
    Group.objects.filter(uid="all-pass").update(in_comparison=True)
    Group.objects.filter(uid="mixed").update(is_mixed=False)
    assert dict(Group.objects.values_list("uid", "to_judge")) == {"mixed": False, "all-pass": True, "all-fail": False}
