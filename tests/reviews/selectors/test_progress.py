"""How far the review has come (reviews/selectors/progress.py), on rows built by tests/factories.py.

bob and dan review acme; alice is its admin (who may review too); tess is a trainer, who does not."""

from __future__ import annotations

import pytest

from grading.models import Membership, Role
from reviews.models import Assignment
from reviews.selectors.progress import my_progress, team_progress
from tests.factories import make_assignment, make_group, make_judgment, make_project, make_run, make_step, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def desk():
    acme = make_project("acme")
    people = {}
    for name, role in (("alice", Role.ADMIN), ("bob", Role.REVIEWER), ("dan", Role.REVIEWER), ("tess", Role.TRAINER)):
        people[name] = make_user(name)
        Membership.objects.create(user=people[name], project=acme, role=role)
    step = make_step(make_run(acme))
    groups = [make_group(f"g{n}@1", step=step, rewards=(1, 0)) for n in range(3)]
    bob, dan = people["bob"], people["dan"]
    make_assignment(groups[0], bob, status=Assignment.Status.SUBMITTED)
    make_judgment(groups[0], bob, tiers={0: "T1"}, blind=True)
    make_assignment(groups[1], bob)
    make_assignment(groups[2], bob, status=Assignment.Status.SKIPPED)
    make_assignment(groups[0], dan, status=Assignment.Status.SUBMITTED, blind=False)
    make_judgment(groups[0], dan, tiers={0: "T2"}, blind=False)
    return {"project": acme, **people}


def test_my_progress_counts_every_status_of_my_assignments(desk):
    assert my_progress(project=desk["project"], reviewer=desk["bob"]) == {"open": 1, "submitted": 1, "skipped": 1}
    assert my_progress(project=desk["project"], reviewer=desk["alice"]) == {"open": 0, "submitted": 0, "skipped": 0}


def test_my_progress_counts_only_the_projects_own_assignments(desk):
    other = make_project("other")
    make_assignment(make_group("x@1", step=make_step(make_run(other))), desk["bob"])
    assert my_progress(project=desk["project"], reviewer=desk["bob"])["open"] == 1
    assert my_progress(project=other, reviewer=desk["bob"]) == {"open": 1, "submitted": 0, "skipped": 0}


def test_team_progress_lists_the_people_who_review_with_their_blind_judgments(desk):
    rows = {row["user"].username: row for row in team_progress(desk["project"])}
    assert sorted(rows) == ["alice", "bob", "dan"]  # a trainer does not review
    assert {k: rows["bob"][k] for k in ("open", "submitted", "skipped", "blind")} == {
        "open": 1,
        "submitted": 1,
        "skipped": 1,
        "blind": 1,
    }
    assert {k: rows["dan"][k] for k in ("open", "submitted", "skipped", "blind")} == {
        "open": 0,
        "submitted": 1,
        "skipped": 0,
        "blind": 0,
    }
