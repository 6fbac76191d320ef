"""The migration that stores the graders' disagreement fills it in for groups graded before it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.grading.migrations.test_queue_order import back_to_latest, migrate  # noqa: F401  (a fixture)

BEFORE = [("grading", "0029_campaigns")]
AFTER = [("grading", "0030_grader_disagreement")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
@pytest.mark.slow
def test_existing_verdicts_give_gap_cheat_split_and_a_waiting_jurys_mark():
    apps = migrate(BEFORE)
    Project, Run, Step, Task, Jury = (apps.get_model("grading", m) for m in ("Project", "Run", "Step", "Task", "Jury"))
    Group, Rollout, Verdict, RolloutGrade = (
        apps.get_model("grading", m) for m in ("Group", "Rollout", "Verdict", "RolloutGrade")
    )
    project = Project.objects.create(name="acme")
    jury = Jury.objects.create(
        project=project, name="pair", version=1, members=["a@1", "b@1"], rule="agree_or_abstain", max_gap=1, on_abstain="wait"
    )
    run = Run.objects.create(project=project, name="r1", jury=jury, grading_deadline_seconds=3600)
    step = Step.objects.create(run=run, number=1)
    task = Task.objects.create(run=run, instance_id="t")

    def group(uid, tiers_by_grader, *, created_at=None):
        g = Group.objects.create(run=run, step=step, task=task, uid=uid, is_mixed=True)
        if created_at is not None:
            Group.objects.filter(pk=g.pk).update(created_at=created_at)
        rollouts = [Rollout.objects.create(group=g, index=i, reward=1.0, passed=True, content_hash=f"{uid}{i}") for i in range(2)]
        for grader, (status, calls) in tiers_by_grader.items():
            verdict = Verdict.objects.create(group=g, grader=grader, status=status)
            for i, (tier, cheat) in enumerate(calls):
                RolloutGrade.objects.create(verdict=verdict, rollout=rollouts[i], tier=tier, rank=i + 1, cheat=cheat)
        return g

    split = group("split", {"a@1": ("valid", [("T1", False), ("T2", True)]), "b@1": ("valid", [("T3", False), ("T2", False)])})
    stale = group(
        "stale",
        {"a@1": ("valid", [("T1", False), ("T1", False)]), "b@1": ("valid", [("T3", False), ("T1", False)])},
        created_at=timezone.now() - timedelta(hours=2),  # its deadline has passed: it fell back
    )
    group(
        "near",
        {
            "a@1": ("valid", [("T1", False), ("T2", False)]),
            "c@1": ("invalid", [("T3", True), ("T3", True)]),  # not valid: not counted
            "jury:pair@1": ("valid", [("T3", True), ("T3", True)]),  # a jury: made of its members
            "b@1": ("valid", [("T2", False), ("T2", False)]),
        },
    )

    apps = migrate(AFTER)
    Group, Rollout = apps.get_model("grading", "Group"), apps.get_model("grading", "Rollout")
    got = {g.uid: (g.grader_gap, g.grader_gap_rollouts, g.awaits_person) for g in Group.objects.all()}
    assert got == {"split": (2, 1, True), "stale": (2, 1, False), "near": (1, 1, False)}
    s = Group.objects.get(pk=split.pk)
    assert s.awaits_person_until == s.created_at + timedelta(seconds=3600)
    assert Group.objects.get(pk=stale.pk).awaits_person_until is None
    assert list(Rollout.objects.filter(cheat_split=True).values_list("group__uid", "index")) == [("split", 1)]
