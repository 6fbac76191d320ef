"""The group page's view models (reviews.presenters.group_page) for a real group.

Group g1@1 is tests/helpers/real_groups.scratch_files_group: six real mini-swe-agent trajectories of two
models; rollouts 0, 1, 2, 4 and 5 pass, 3 fails; 0, 2 and 4 make one change, 4 with three
scratch files in front of it (a FIX_SUMMARY.md of 50 lines); rollout 1 has no test outcomes. It is graded by the heuristic
grader. alice is acme's admin and sees the verdict; bob reviews acme and judges g1@1 blind.
"""

from __future__ import annotations

import dataclasses

import pytest
from django.http import Http404
from django.template.loader import render_to_string

from grading.jobs.grade import grade_group
from grading.models import Group, Membership
from reviews.presenters.group_page import group_page, parts
from reviews.services.queue import assign
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import producer_values, scratch_files_group

pytestmark = pytest.mark.django_db

BOB_ORDER = [4, 0, 5, 2, 1, 3]  # bob's blind shuffle: passing first, so A..E pass and F fails


@pytest.fixture
def line():
    return scratch_files_group("g1@1", summary_lines=50)  # short enough for rollout 4's patch to show inline


@pytest.fixture
def group(acme, line):
    ingest_groups(acme, line)
    group = Group.objects.select_related("run__project", "step", "task").get(uid="g1@1")
    grade_group(group_id=group.id, backend="heuristic")
    return group


def _page(person, group, **query):
    membership = Membership.objects.get(user=person, project=group.run.project)
    return group_page(user=person, group=group, membership=membership, query=query)


def test_the_admin_sees_each_lane_passing_first_with_its_patch_and_the_verdict(alice, group):
    page = _page(alice, group)
    assert [lane.lane for lane in page.rollouts] == ["0", "1", "2", "4", "5", "3"]
    assert [lane.outcome for lane in page.rollouts] == ["pass"] * 5 + ["fail"]
    assert (page.n_all, page.n_passing, page.n_failing) == (6, 5, 1)
    assert page.group.uid == "g1@1" and page.group.step_number == 1 and page.group.is_mixed
    assert page.task.instance_id and page.verdict is not None
    lanes = {lane.index: lane for lane in page.rollouts}
    assert all(lanes[i].grade is not None and lanes[i].grade.tier in page.tiers for i in (0, 1, 2, 4, 5))
    assert lanes[0].source_ref.startswith("results_claude_10/") and lanes[0].cost_usd is not None


def test_a_lane_with_scratch_files_shows_the_change_open_and_the_scratch_files_collapsed(alice, group):
    lanes = {lane.index: lane for lane in _page(alice, group).rollouts}
    lane, fix = lanes[4], lanes[0]
    assert not lane.diff_deferred
    assert [t.file.path for t in lane.diff.extra] == ["FIX_SUMMARY.md", "debug_issue.py", "reproduce_issue.py"]
    assert [t.file.path for t in lane.diff.tables] == [t.file.path for t in fix.diff.tables]
    assert {t.kind for t in lane.diff.extra} == {"extra"} and all(t.kind != "extra" for t in lane.diff.tables)
    assert all(t.view == "unified" and t.lane == "4" for t in lane.diff.tables + lane.diff.extra)
    assert lane.cluster_info.label == "same change as #0, #2, +3 extra files"
    assert lane.patch_files == 4 and lane.patch_size == len(lane.diff.raw)


def test_a_rollout_without_test_outcomes_says_so(alice, group):
    lane = next(lane for lane in _page(alice, group).rollouts if lane.index == 1)
    assert not lane.test_outcomes and lane.test_counts == {}


def test_a_blind_judge_sees_lanes_by_label_and_no_grader_or_producer_field(bob, group, line):
    assignment = assign(group=group, reviewer=bob, blind=True)
    assignment.order = BOB_ORDER
    assignment.save(update_fields=["order"])
    page = _page(bob, group)
    assert [lane.lane for lane in page.rollouts] == ["A", "B", "C", "D", "E", "F"]
    assert [lane.index for lane in page.rollouts] == BOB_ORDER
    assert page.review.blind and page.review.judging and page.verdict is None and page.browse_reveal is None
    assert all(lane.grade is None and not lane.evidence_links and lane.turn_weights is None for lane in page.rollouts)
    assert all(lane.source_format == "" and lane.source_ref == "" and lane.cost_usd is None for lane in page.rollouts)
    shown = repr(page.rollouts)
    assert not [value for value in producer_values(line) if value in shown]
    assert page.rollouts[0].cluster_info.label == "same change as B, D, +3 extra files"


def test_the_failing_filter_keeps_the_passing_lanes_judging_fields_off_page(bob, group):
    assign(group=group, reviewer=bob, blind=False)
    page = _page(bob, group, only="failing")
    assert [lane.index for lane in page.rollouts] == [3]
    assert [lane.index for lane in page.off_page] == [0, 1, 2, 4, 5]
    assert len(page.all_rollouts) == 6


def test_a_search_hit_link_opens_that_lanes_turns_with_the_hit_bar(alice, group):
    page = _page(alice, group, lane="2", q="django", start="3")
    lane = next(lane for lane in page.rollouts if lane.index == 2)
    assert page.hit_lane == 2 and lane.hit_bar["q"] == "django" and lane.hit_bar["error"] == ""
    assert lane.hit_bar["hits_url"] == "/projects/acme/runs/r1/groups/g1@1/rollouts/2/hits/"
    assert lane.open_turns["turns"][0].position == 3
    assert all(other.hit_bar is None and other.open_turns is None for other in page.rollouts if other.index != 2)


def test_view_models_are_frozen_and_render_without_a_query(alice, group, django_assert_num_queries):
    page = _page(alice, group)
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.rollouts[0].mine = {}  # type: ignore[misc]
    with django_assert_num_queries(0):
        html = render_to_string("reviews/group.html", page.context())
    assert 'id="rollout-4"' in html and "+3 extra files" in html


def test_the_diff_partial_in_the_split_view(alice, group):
    part = parts.diff_part(user=alice, group=group, lane="4", view="split")
    assert part.rollout.lane == "4" and part.values["diff_view"] == "split"
    assert [t.file.path for t in part.rollout.diff.extra] == ["FIX_SUMMARY.md", "debug_issue.py", "reproduce_issue.py"]
    assert all(t.view == "split" for t in part.rollout.diff.tables) and part.rollout.diff.note == ""
    with pytest.raises(Http404):  # no rollout 9 in this group
        parts.diff_part(user=alice, group=group, lane="9", view="split")


def test_a_blind_judge_names_partials_by_label_only(bob, group):
    assignment = assign(group=group, reviewer=bob, blind=True)
    assignment.order = BOB_ORDER
    assignment.save(update_fields=["order"])
    assert parts.turns_part(user=bob, group=group, lane="0", start=0, query="") is None
    part = parts.turns_part(user=bob, group=group, lane="A", start=0, query="")
    assert part.rollout.index == 4 and part.rollout.lane_name == "A" and part.values["n_messages"] == part.rollout.n_messages
    with pytest.raises(parts.TurnQueryTooLong):
        parts.turns_part(user=bob, group=group, lane="A", start=0, query="x" * (parts.TURN_QUERY_CHARS + 1))
