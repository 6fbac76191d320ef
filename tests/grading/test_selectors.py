"""The run, step and group pages' reads (grading/selectors/), on rows built by tests/factories.py."""

from __future__ import annotations

import pytest

from grading.models import Group, Rollout
from grading.selectors.rollouts import cluster_members
from grading.selectors.totals import group_totals
from grading.selectors.verdicts import latest_verdict
from tests.factories import make_group, make_step, make_verdict

pytestmark = pytest.mark.django_db


def test_cluster_members_reads_members_from_the_stored_fields():
    clusters = {0: 0, 1: 1, 2: 0, 3: 1}  # what ingest stores for OTHER_FIX, FIX, OTHER_FIX, FIX_SPACED
    make_group(rewards=(1, 1, 1, 0), rollouts={i: {"cluster": c} for i, c in clusters.items()})
    assert cluster_members(Rollout.objects.filter(group__uid="t-1@1")) == {0: [0, 2], 1: [1, 3]}


def test_cluster_members_leaves_out_rollouts_not_clustered_yet():
    make_group(rewards=(1, 0, 1), rollouts={0: {"cluster": 0}, 2: {"cluster": 0}})
    assert cluster_members(Rollout.objects.filter(group__uid="t-1@1")) == {0: [0, 2]}


def test_group_totals_count_passes_and_distinct_solutions_of_clustered_groups_only():
    step = make_step()
    make_group("a@1", step=step, rewards=(1, 1, 0), distinct_solutions=1)  # two passes, one solution
    make_group("b@1", step=step, rewards=(1, 1, 1, 0), distinct_solutions=3)
    make_group("c@1", step=step, rewards=(1, 1))  # not clustered yet: out of the solution counts
    make_group("d@1", step=step, rewards=(0, 0))
    totals = group_totals(Group.objects.filter(step=step))
    assert totals["n_groups"] == 4 and totals["n_mixed"] == 2
    assert totals["n_rollouts"] == 11 and totals["n_passed"] == 7
    assert totals["n_multi_pass"] == 2 and totals["n_multi_passes"] == 5 and totals["n_distinct"] == 4
    assert totals["distinct_per_group"] == 2.0


def test_group_totals_of_no_groups_are_zero_without_a_distinct_mean():
    totals = group_totals(Group.objects.none())
    assert totals["n_groups"] == 0 and totals["n_passed"] == 0 and totals["distinct_per_group"] is None


def test_latest_verdict_is_the_newest_with_its_grades_by_rollout_index(django_assert_num_queries):
    group = make_group(rewards=(1, 0, 1))
    make_verdict(group, grader="old@1", tiers={0: "T3", 2: "T3"})
    newest = make_verdict(group, grader="new@1", tiers={2: "T1", 0: "T2"})
    with django_assert_num_queries(2):
        verdict, grades = latest_verdict(group)
    assert verdict == newest
    assert {i: (g.tier, g.rank) for i, g in grades.items()} == {2: ("T1", 1), 0: ("T2", 2)}


def test_latest_verdict_of_an_ungraded_group_is_none():
    assert latest_verdict(make_group()) == (None, {})
