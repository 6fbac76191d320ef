"""The queue's order is stored on the group and equals what it used to compute per request:
groups with a valid verdict first, then Σ|A* − A| under the run's active mapping (from the
stored AdvantageResult rows), then step number and uid."""

from __future__ import annotations

import pytest
from django.db.models import F, Sum
from django.db.models.functions import Abs

from grading.method.services.activation import activate_mapping
from grading.method.services.computation import refresh_stale_step
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, CheatDecision, FactorMapping, Group, Step
from grading.verdicts.store import GradeInput, decide_cheat, record_verdict
from reviews.selectors.queue import queue_groups
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db

STEEP = {"T1": [1.0, 1.0], "T2": [0.6, 0.4], "T3": [0.1, 0.1]}


def credit_from_rows(group: Group, mapping) -> float:
    """What queue_groups summed per candidate before it was stored."""
    return (
        AdvantageResult.objects.filter(step_id=group.step_id, uid=group.uid, mapping=mapping).aggregate(
            s=Sum(Abs(F("redistributed_advantage") - F("advantage")))
        )["s"]
        or 0.0
    )


def compute_all(run, mapping=None):
    for step in Step.objects.filter(run=run):
        refresh_stale_step(step=step, mapping=mapping or active_mapping(run))


@pytest.fixture
def run_groups(acme):
    ingest_groups(
        acme,
        *[small_group(f"g{i}@{s}", step=s, instance_id=f"g{i}", rewards=(1, 1, 0, 1)) for s in (1, 2) for i in range(3)],
        small_group("pass@1", instance_id="pass", rewards=(1, 1)),
    )
    tiers = {"g0@1": ("T1", "T3", "T3"), "g1@1": ("T1", "T2", "T2"), "g0@2": ("T1", "T1", "T3"), "g1@2": ("T1", "T1", "T1")}
    for uid, (a, b, c) in tiers.items():
        record_verdict(
            group=Group.objects.get(uid=uid),
            grader="g@1",
            status="valid",
            grades=[GradeInput(0, a, 1), GradeInput(1, b, 2), GradeInput(3, c, 3)],
        )
    record_verdict(group=Group.objects.get(uid="g2@1"), grader="g@1", status="invalid", errors=["no JSON"])
    run = Group.objects.get(uid="g0@1").run
    compute_all(run)
    return run


def expected_order(run, mapping) -> list[str]:
    groups = list(Group.objects.filter(run=run, is_mixed=True).select_related("step"))
    graded = set(Group.objects.filter(verdicts__status="valid").values_list("pk", flat=True))
    return [
        g.uid
        for g in sorted(groups, key=lambda g: (g.pk not in graded, -round(credit_from_rows(g, mapping), 9), g.step.number, g.uid))
    ]


def test_stored_credit_and_order_match_the_advantage_rows(run_groups, acme, bob):
    run, mapping = run_groups, active_mapping(run_groups)
    groups = Group.objects.filter(run=run)
    for group in groups:
        assert group.credit_moved == pytest.approx(credit_from_rows(group, mapping), abs=1e-12), group.uid
        assert group.step_number == group.step.number
    assert set(groups.filter(has_valid_verdict=True).values_list("uid", flat=True)) == {"g0@1", "g1@1", "g0@2", "g1@2"}
    assert Group.objects.get(uid="g0@1").credit_moved > Group.objects.get(uid="g1@1").credit_moved > 0
    assert Group.objects.get(uid="g1@2").credit_moved == 0  # every pass T1: nothing moves
    assert [g.uid for g in queue_groups(project=acme, reviewer=bob)] == expected_order(run, mapping)
    assert [g.uid for g in queue_groups(project=acme, reviewer=bob)][:3] == ["g0@1", "g0@2", "g1@1"]


def test_a_confirmed_cheat_changes_the_stored_credit_after_recomputation(run_groups, acme, bob):
    group = Group.objects.get(uid="g1@1")
    before = group.credit_moved
    decision = CheatDecision.objects.create(rollout=group.rollouts.get(index=0), source=CheatDecision.Source.REVIEWER)
    decide_cheat(decision=decision, confirmed=True, reason="copied the fix")
    compute_all(run_groups)
    group.refresh_from_db()
    assert group.credit_moved != before
    assert group.credit_moved == pytest.approx(credit_from_rows(group, active_mapping(run_groups)), abs=1e-12)
    assert [g.uid for g in queue_groups(project=acme, reviewer=bob)] == expected_order(run_groups, active_mapping(run_groups))


def test_a_new_active_mapping_orders_by_its_own_rows_and_others_leave_the_order_alone(run_groups, acme, alice, bob):
    default = active_mapping(run_groups)
    steep = FactorMapping.objects.create(project=acme, name="steep", version=1, bands=STEEP, created_by=alice)
    stored = dict(Group.objects.values_list("uid", "credit_moved"))
    compute_all(run_groups, steep)  # computed, not active: the queue still orders by the default mapping
    assert dict(Group.objects.values_list("uid", "credit_moved")) == stored

    activate_mapping(run=run_groups, mapping=steep, user=alice)
    compute_all(run_groups)
    moved = dict(Group.objects.values_list("uid", "credit_moved"))
    assert moved["g0@1"] > stored["g0@1"]  # the steeper T3 factor moves more credit
    for group in Group.objects.filter(run=run_groups):
        assert group.credit_moved == pytest.approx(credit_from_rows(group, steep), abs=1e-12)
    assert [g.uid for g in queue_groups(project=acme, reviewer=bob)] == expected_order(run_groups, steep)

    activate_mapping(run=run_groups, mapping=default, user=alice)  # back: the default's rows are there already
    assert dict(Group.objects.values_list("uid", "credit_moved")) == pytest.approx(stored)
