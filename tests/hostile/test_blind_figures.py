"""Figures that move when a group is handed out: a blind judge who reads the agreement and
grader-bench figures, asks for their next group, and reads them again must find them
unchanged, or the difference is the grader's and the other reviewer's tiers on the group
they were just handed.

So every figure leaves out, for a person who may be served groups blind, both their open
blind groups and every group the queue may still serve them (reviews.selectors.blind.
withheld_groups); a group they judged, skipped or chose to see counts again. Those who
manage the project, and callers who may not review (a trainer's token), see every group
but their own open blind ones.

World: policy blind, overlap 1 (every group wants two reviewers), run r1 step 1. g1@1 and
g2@1 are graded by GRADER; g3@1 is not. dan (reviewer) judged g1 and g2, eve (reviewer)
judged g2, so g2 wants nobody more and g1 waits for a second reviewer: the queue serves it
next, graded groups first. g1's grader tiers are all T1, g2's one in three.
"""

from __future__ import annotations

import re

import pytest

from grading.models import Group, Role
from grading.verdicts.store import GradeInput, record_verdict
from reviews.models import Assignment, Reveal
from reviews.services.judgments import ItemInput, submit_judgment
from reviews.services.queue import assign, update_policy
from tests.helpers.desk import as_lanes
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member
from tests.helpers.routes import doors

pytestmark = pytest.mark.django_db

GRADER = "figures-grader@1"
AGREEMENT = "/api/v1/agreement/?project=acme&run=r1&slices=true&n_boot=0"
COMPARE = f"/api/v1/graders/compare/?project=acme&run=r1&graders={GRADER}&n_boot=0"
CALIBRATION = "/projects/acme/calibration/?run=r1"
BENCH = f"/projects/acme/calibration/bench/?run=r1&grader={GRADER}"
# Every route that shows grader tiers or agreement figures over groups: the agreement API and
# the calibration page (reviews.selectors.calibration.figures), the compare API and the bench
# page (reviews.selectors.bench.comparison).
FIGURE_DOORS = {"api-agreement": AGREEMENT, "api-graders-compare": COMPARE, "calibration": CALIBRATION, "grader-bench": BENCH}
WITHHELD_COUNTS = ("withheld_open_blind_groups", "withheld_queued_groups")
G2_T1_SHARE = pytest.approx(1 / 3, abs=1e-6)  # on g2 alone: what a figure without g1 says
BOTH_T1_SHARE = pytest.approx(4 / 6, abs=1e-6)


def _items(tiers: dict[int, str]) -> list[ItemInput]:
    return [ItemInput(i, t) for i, t in tiers.items()]


@pytest.fixture
def people(acme, alice, bob):
    return {
        "alice": alice,  # admin
        "bob": bob,  # reviewer
        "dan": member("dan", acme, Role.REVIEWER),
        "eve": member("eve", acme, Role.REVIEWER),
        "fay": member("fay", acme, Role.ADJUDICATOR),
        "ida": member("ida", acme, Role.AUDITOR),
    }


@pytest.fixture
def world(acme, people):
    ingest_groups(
        acme,
        small_group("g1@1", rewards=(1, 1, 0, 1)),
        small_group("g2@1", instance_id="t-2", rewards=(1, 1, 0, 1)),
        small_group("g3@1", instance_id="t-3", rewards=(1, 1, 0, 1)),
    )
    g = {x.uid: x for x in Group.objects.all()}
    record_verdict(
        group=g["g1@1"],
        grader=GRADER,
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T1", 1), GradeInput(3, "T1", 1)],
    )
    record_verdict(
        group=g["g2@1"],
        grader=GRADER,
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2), GradeInput(3, "T3", 3)],
    )
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    for reviewer, group, tiers in (
        ("dan", "g1@1", {0: "T2", 1: "T3", 3: "T3"}),
        ("dan", "g2@1", {0: "T1", 1: "T2", 3: "T3"}),
        ("eve", "g2@1", {0: "T1", 1: "T2", 3: "T2"}),
    ):
        assign(group=g[group], reviewer=people[reviewer])
        submit_judgment(reviewer=people[reviewer], group=g[group], items=_items(tiers))
    return g


def _read(client, doors_: dict[str, str]) -> dict[str, object]:
    """What each figure door shows: the API bodies without the withheld counts (which say how
    many groups are left out, not what they hold), the pages without their CSRF tokens."""
    out: dict[str, object] = {}
    for name, url in doors_.items():
        r = client.get(url)
        assert r.status_code == 200, (name, r.status_code)
        if name.startswith("api-"):
            body = r.json()
            for key in WITHHELD_COUNTS:
                body.pop(key, None)
            out[name] = body
        else:
            out[name] = re.sub(r'(csrfmiddlewaretoken" value=|"x-csrftoken": )"[^"]*"', "", r.content.decode())
    return out


def _t1_share(compare_body: dict) -> float:
    return compare_body["graders"][0]["would_move"]["t1_share"]


def test_the_figure_doors_are_every_route_that_shows_agreement_figures(world):
    names = {name for name, _ in doors()}
    assert set(FIGURE_DOORS) <= names


@pytest.mark.parametrize("who", ["bob", "fay", "ida"])  # reviewer, adjudicator, auditor: each may be served blind
def test_judge_next_moves_no_figure_by_the_group_it_hands_out(client, people, world, who):
    """The reported leak: read both APIs, press "judge next", read again. Before the fix the
    compare API's T1 share went from 4/6 to 1/3 and the agreement's confusion matrix lost
    three rollouts: g1's grader tiers (all T1) and dan's, by subtraction."""
    person = people[who]
    client.force_login(person)
    # The bench page is for admins and adjudicators; the others read the rest.
    shown = {k: v for k, v in FIGURE_DOORS.items() if k != "grader-bench" or who == "fay"}
    before = _read(client, shown)
    r = client.post("/projects/acme/review/next/")
    assert r.status_code == 302 and r["Location"].endswith("/runs/r1/groups/g1@1/")
    assignment = Assignment.objects.get(reviewer=person, group=world["g1@1"])
    assert assignment.is_open_blind
    after = _read(client, shown)
    assert after == before
    # Neither reading holds g1: the figures are g2's alone, so nothing of g1 can be subtracted out.
    compare = client.get(COMPARE).json()
    assert _t1_share(compare) == G2_T1_SHARE
    assert compare["withheld_open_blind_groups"] == 1 and compare["withheld_queued_groups"] == 1  # g1 open, g3 queued
    agreement = client.get(AGREEMENT).json()
    assert agreement["n_groups"] == 1 and sum(map(sum, agreement["confusion"])) == 3
    assert agreement["withheld_open_blind_groups"] == 1 and agreement["withheld_queued_groups"] == 1
    # Once judged, g1 counts again for them.
    client.post("/projects/acme/runs/r1/groups/g1@1/judgment/", as_lanes(_tiers_post(), client, "g1@1"))
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert _t1_share(client.get(COMPARE).json()) == BOTH_T1_SHARE
    assert client.get(AGREEMENT).json()["n_groups"] == 2


def _tiers_post() -> dict:
    return {"tier-0": "T1", "tier-1": "T1", "tier-3": "T1", "seen_version": "0"}


def test_a_group_the_queue_may_still_serve_counts_in_no_figure_before_it_is_handed_out(client, people, world):
    """Before bob asks for a group, g1 (which the queue will serve him) is already out of
    every figure he reads, and so is g3; g2, which wants no more reviewers, counts."""
    client.force_login(people["bob"])
    compare = client.get(COMPARE).json()
    assert _t1_share(compare) == G2_T1_SHARE
    assert compare["withheld_open_blind_groups"] == 0 and compare["withheld_queued_groups"] == 2
    agreement = client.get(AGREEMENT).json()
    assert agreement["n_groups"] == 1 and agreement["grader_versions"] == {GRADER: 1}
    for row in agreement["slices"]:
        assert row["n_groups"] <= 1, row


def test_a_group_held_by_someone_elses_lease_stays_out_of_the_figures(client, people, world):
    """g1 held by another reviewer's open assignment is not served to bob now, but may be once
    the lease lapses: it stays out of his figures all along."""
    assign(group=world["g1@1"], reviewer=people["eve"])  # g1 now has its two reviewers: dan's and eve's open one
    client.force_login(people["bob"])
    assert _t1_share(client.get(COMPARE).json()) == G2_T1_SHARE


def test_a_group_they_skipped_or_chose_to_see_counts_again(client, people, world):
    client.force_login(people["bob"])
    client.post("/projects/acme/review/next/")
    assignment = Assignment.objects.get(reviewer=people["bob"], group=world["g1@1"])
    client.post("/projects/acme/runs/r1/groups/g1@1/skip/")
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SKIPPED  # never served to him again
    assert _t1_share(client.get(COMPARE).json()) == BOTH_T1_SHARE
    # ida (auditor) opens g1's page: her role sees the verdict there, logged as a reveal, so the
    # queue never serves her g1 blind, and it counts in her figures from then on.
    client.force_login(people["ida"])
    assert _t1_share(client.get(COMPARE).json()) == G2_T1_SHARE
    client.get("/projects/acme/runs/r1/groups/g1@1/")
    assert Reveal.objects.filter(user=people["ida"], group=world["g1@1"]).exists()
    assert _t1_share(client.get(COMPARE).json()) == BOTH_T1_SHARE


def test_who_is_not_blind_sees_every_figure(client, people, world, acme, trainer_token):
    """An admin (who fits and activates mappings on these figures), a trainer's token (which
    may not review), and anyone once the project's policy is not blind (the queue hands
    groups out with the verdict shown) read every group; an admin's own open blind groups
    are still left out."""
    client.force_login(people["alice"])
    assert _t1_share(client.get(COMPARE).json()) == BOTH_T1_SHARE
    assert client.get(AGREEMENT).json()["n_groups"] == 2
    assert "2 groups every chosen grader graded and people judged ·" in client.get(BENCH).content.decode()
    r = client.get(COMPARE.replace("project=acme&", ""), HTTP_AUTHORIZATION=f"Token {trainer_token}")
    assert r.status_code == 200 and _t1_share(r.json()) == BOTH_T1_SHARE
    r = client.get(AGREEMENT.replace("project=acme&", ""), HTTP_AUTHORIZATION=f"Token {trainer_token}")
    assert r.json()["n_groups"] == 2 and r.json()["withheld_queued_groups"] == 0
    assign(group=world["g1@1"], reviewer=people["alice"])  # her own open blind group: out, as for anyone
    assert _t1_share(client.get(COMPARE).json()) == G2_T1_SHARE
    update_policy(project=acme, overlap=1.0, blind=False, lease_minutes=60)
    for who in ("bob", "ida", "fay"):
        client.force_login(people[who])
        compare = client.get(COMPARE).json()
        assert _t1_share(compare) == BOTH_T1_SHARE and compare["withheld_queued_groups"] == 0, who
        assert client.get(AGREEMENT).json()["n_groups"] == 2, who
