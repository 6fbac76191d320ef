"""The migration that stores the uncited mark finds it on judgments stored before it."""

from __future__ import annotations

import pytest

from tests.grading.migrations.test_queue_order import back_to_latest, migrate  # noqa: F401  (a fixture)

BEFORE = [("grading", "0043_scanner_reads")]
AFTER = [("grading", "0044_uncited_judgments")]
CITED = [{"kind": "turn", "rollout": 0, "locator": "0", "note": "x"}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
@pytest.mark.slow
def test_a_graders_negative_judgment_that_cites_nothing_is_marked_and_nothing_else():
    apps = migrate(BEFORE)
    Project, Run, Step, Task = (apps.get_model("grading", m) for m in ("Project", "Run", "Step", "Task"))
    Group, Rollout, Verdict, RolloutGrade = (
        apps.get_model("grading", m) for m in ("Group", "Rollout", "Verdict", "RolloutGrade")
    )
    run = Run.objects.create(project=Project.objects.create(name="acme"), name="r1")
    step = Step.objects.create(run=run, number=1)
    group = Group.objects.create(run=run, step=step, task=Task.objects.create(run=run, instance_id="t"), uid="g", is_mixed=True)
    rollouts = [Rollout.objects.create(group=group, index=i, reward=1.0, passed=True, content_hash=str(i)) for i in range(6)]
    posted = Verdict.objects.create(group=group, grader="fleet@1", status="valid", raw={"external": {"posted_by": "alice"}})
    person = Verdict.objects.create(group=group, grader="jury:j@1", status="valid", settled_by="person")
    judged = {
        # rollout: (tier, cheat, scores, evidence) of fleet@1
        0: ("T1", False, {"minimality": 4}, []),  # nothing against it: not uncited
        1: ("T2", False, {}, []),
        2: ("T1", True, {}, []),
        3: ("T1", False, {"minimality": 1}, []),
        4: ("T3", False, {}, CITED),  # cited
        5: ("T3", False, {}, []),
    }
    for index, (tier, cheat, scores, evidence) in judged.items():
        RolloutGrade.objects.create(
            verdict=posted, rollout=rollouts[index], tier=tier, rank=index + 1, cheat=cheat, scores=scores, evidence=evidence
        )
    RolloutGrade.objects.create(verdict=person, rollout=rollouts[1], tier="T3", rank=1)  # a person's word: never marked

    apps = migrate(AFTER)
    RolloutGrade = apps.get_model("grading", "RolloutGrade")
    marked = set(RolloutGrade.objects.filter(uncited=True).values_list("verdict__grader", "rollout__index"))
    assert marked == {("fleet@1", 1), ("fleet@1", 2), ("fleet@1", 3), ("fleet@1", 5)}
