"""The graders' disagreement stored on groups and rollouts as verdicts land, and the mark of
a group the run's jury waits on for a person (grading.verdicts.disagreements)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from grading.jobs.policy import update_run_policy
from grading.models import Group, Rollout, Run, Step
from grading.verdicts.deliberation import record_jury_verdict
from grading.verdicts.disagreements import expire_person_waits, refresh_disagreement
from grading.verdicts.store import GradeInput, record_verdict
from grading.waits.progress import step_status
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.juries import MEMBERS, grade, grade_pair, jury_policy

pytestmark = pytest.mark.django_db

AGREE = {0: "T1", 1: "T2", 3: "T3"}
SPLIT = {0: "T3", 1: "T2", 3: "T1"}  # against AGREE: two tiers apart on 0 and on 3


@pytest.fixture
def run(acme) -> Run:
    ingest_groups(acme, *(small_group(f"g{i}@1", instance_id=f"t-{i}", rewards=(1, 1, 0, 1)) for i in range(3)))
    return Run.objects.get(name="r1")


def stored(uid: str) -> tuple:
    g = Group.objects.get(uid=uid)
    return g.grader_gap, g.grader_gap_rollouts, g.awaits_person


def test_gap_and_cheat_split_follow_each_valid_verdict_and_leave_out_invalid_ones(run):
    g0 = Group.objects.get(uid="g0@1")
    grade(g0, "heuristic@1", AGREE)
    assert stored("g0@1") == (0, 0, False)  # one grader: nothing to differ on
    grade(g0, "ext@1", {0: "T2", 1: "T2", 3: "T2"}, cheat={1})
    assert stored("g0@1") == (1, 2, False)  # a tier apart on rollouts 0 and 3
    assert list(Rollout.objects.filter(group=g0, cheat_split=True).values_list("index", flat=True)) == [1]
    record_verdict(group=g0, grader="broken@1", status="invalid", errors=["no JSON"])
    grade(g0, "llm:m@1.gab", SPLIT, cheat={1})
    assert stored("g0@1") == (2, 2, False)  # T1 against T3 on rollouts 0 and 3
    assert list(Rollout.objects.filter(cheat_split=True).values_list("index", flat=True)) == [1]  # 2 of 3 flag it: split


def test_a_jury_verdict_does_not_count_as_a_grader(run, acme):
    jury = jury_policy(acme, run, on_abstain="fallback", max_gap=2)  # never abstains
    g0 = Group.objects.get(uid="g0@1")
    grade_pair(g0, AGREE, {0: "T2", 1: "T2", 3: "T2"})
    assert g0.verdicts.filter(grader=jury.grader, status="valid").exists()
    assert stored("g0@1") == (1, 2, False)  # the members' gap; the jury's tiers are theirs combined


def test_a_waiting_jury_marks_the_split_group_until_the_deadline(run, acme):
    jury_policy(acme, run, on_abstain="wait", max_gap=1)
    split, agree = Group.objects.get(uid="g0@1"), Group.objects.get(uid="g1@1")
    grade(split, MEMBERS[0], AGREE)
    assert stored("g0@1") == (0, 0, False)  # the jury waits for its second member, not for a person
    grade(split, MEMBERS[1], SPLIT)
    grade_pair(agree, AGREE, {0: "T1", 1: "T1", 3: "T2"})
    assert stored("g0@1") == (2, 2, True) and stored("g1@1") == (1, 2, False)
    split.refresh_from_db()
    assert step_status(Step.objects.get(run=run)).pending == 2  # g0 held for a person, g2 not graded yet
    assert split.awaits_person_until == split.created_at + timedelta(seconds=600)

    # The deadline passes: the group fell back; the mark goes with the sweep.
    assert expire_person_waits(now=split.awaits_person_until - timedelta(seconds=1)) == 0
    assert expire_person_waits(now=split.awaits_person_until) == 1
    assert stored("g0@1") == (2, 2, False) and Group.objects.get(uid="g0@1").awaits_person_until is None
    # Recomputed (a late verdict) before the deadline it is marked again; past it, not.
    until = split.awaits_person_until
    grade(split, "heuristic@1", AGREE)
    assert stored("g0@1") == (2, 2, True)
    assert refresh_disagreement(group_ids=[split.pk], now=until + timedelta(seconds=1)) == 1
    assert stored("g0@1") == (2, 2, False)


def test_the_mark_goes_when_the_jury_verdict_lands_or_the_policy_changes(run, acme):
    jury = jury_policy(acme, run, on_abstain="wait", max_gap=1)
    g0, g2 = Group.objects.get(uid="g0@1"), Group.objects.get(uid="g2@1")
    grade_pair(g0, AGREE, SPLIT)
    grade_pair(g2, AGREE, SPLIT)
    assert stored("g0@1")[2] and stored("g2@1")[2]
    # A person settles g0: the jury's verdict is stored (how, is the jury's business).
    record_verdict(
        group=g0,
        grader=jury.grader,
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2), GradeInput(3, "T2", 2)],
    )
    assert stored("g0@1") == (2, 2, False)
    # A longer deadline moves the wait; a jury that falls back at once waits for nobody.
    update_run_policy(run=run, changes={"grading_deadline_seconds": 3600})
    g2.refresh_from_db()
    assert g2.awaits_person and g2.awaits_person_until == g2.created_at + timedelta(seconds=3600)
    jury_policy(acme, run, on_abstain="fallback", max_gap=1)  # a new version, with no verdict on g2 yet
    assert stored("g2@1") == (2, 2, False)
    assert record_jury_verdict(jury=Run.objects.get(pk=run.pk).jury, group=g2).status == "invalid"  # it falls back
    update_run_policy(run=run, changes={"jury": None})
    assert not Group.objects.filter(awaits_person=True).exists()
