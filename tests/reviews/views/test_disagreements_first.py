"""Disagreements to people first: with the review policy's `disagreements_first` (the
default) the queue serves the groups the run's jury waits on for a person, then the widest
grader gaps, ahead of its credit order; the cheat audit puts the cheat calls graders split on
first. Those who manage the project are told why a group is next; a blind reviewer only that
it is."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.utils import timezone

from grading.method.guide import RUBRIC
from grading.method.services.computation import refresh_stale_step
from grading.method.services.mappings import active_mapping
from grading.models import CheatDecision, Group, Run, Step, Verdict
from reviews.models import Assignment, ReviewPolicy
from reviews.selectors.queue import QUEUE_ORDER, queue_groups
from reviews.services.queue import assign, update_policy
from tests.helpers.desk import as_lanes, group_url, judgment_post
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups, post_groups
from tests.helpers.juries import grade_pair, jury_policy

A = {0: "T1", 1: "T2", 3: "T3"}
FAR = {0: "T3", 1: "T2", 3: "T1"}  # against A: two tiers apart on 0 and 3 -- the jury abstains and waits
NEAR = {0: "T2", 1: "T2", 3: "T3"}  # a tier apart on 0 -- the jury combines
# Text only a reason can put on a page.
REASON_TEXT = ("a jury waits for you", "graders differ by", "of credit (Σ|A* − A|)", 'data-testid="why-next"')


@pytest.fixture
def world(acme):
    """r1 step 1: g0 split two tiers (the jury waits for a person), g1 a tier apart (the jury's
    verdict stands), g2 agreed, g3 not graded; a member flags g0 #3 (the other does not) and
    both flag g2 #1; the step computed, so credit is stored."""
    ingest_groups(acme, *(small_group(f"g{i}@1", instance_id=f"t-{i}", rewards=(1, 1, 0, 1)) for i in range(4)))
    run = Run.objects.get(name="r1")
    jury_policy(acme, run, on_abstain="wait", max_gap=1)
    g = {x.uid: x for x in Group.objects.all()}
    grade_pair(g["g0@1"], A, FAR, cheat_a={3})
    grade_pair(g["g1@1"], A, NEAR)
    grade_pair(g["g2@1"], A, A, cheat_a={1}, cheat_b={1})
    step = Step.objects.get(run=run)
    refresh_stale_step(step=step, mapping=active_mapping(run))
    return {x.uid: x for x in Group.objects.all()}


def old_key(g: Group):
    return (not g.has_valid_verdict, -g.credit_moved, g.step_number, g.uid)


def uids(project, reviewer) -> list[str]:
    return [g.uid for g in queue_groups(project=project, reviewer=reviewer)]


def next_group(client) -> str | None:
    r = client.post("/projects/acme/review/next/")
    assert r.status_code == 302
    return r.url.rstrip("/").split("/groups/")[1] if "/groups/" in r.url else None


@pytest.mark.django_db
def test_the_group_a_jury_waits_on_is_first_then_the_widest_gap_and_next_serves_it(client, acme, bob, world):
    g0 = world["g0@1"]
    assert (g0.awaits_person, g0.grader_gap, world["g1@1"].grader_gap, world["g2@1"].grader_gap) == (True, 2, 1, 0)
    assert not Verdict.objects.filter(group=g0, grader__startswith="jury:").exists()  # it waits: no jury verdict
    old = [g.uid for g in sorted((g for g in world.values() if g.is_mixed), key=old_key)]
    assert old[0] != "g0@1" and world["g0@1"].credit_moved == 0  # by credit alone, it would wait its turn
    assert uids(acme, bob) == ["g0@1", "g1@1", "g2@1", "g3@1"]
    client.force_login(bob)
    assert next_group(client) == "g0@1"


@pytest.mark.django_db
def test_a_persons_judgment_settles_the_wait_and_the_group_is_no_longer_first_for_it(client, acme, bob, dan, world):
    client.force_login(bob)
    assert next_group(client) == "g0@1"
    r = client.post(group_url("g0@1", "judgment/"), as_lanes(judgment_post(A), client, "g0@1"))
    assert r.status_code == 302
    g0 = Group.objects.get(uid="g0@1")
    assert Verdict.objects.get(group=g0, grader__startswith="jury:").settled_by == "person"
    assert (g0.awaits_person, g0.awaits_person_until, g0.grader_gap) == (False, None, 2)  # the graders still differ
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)  # a second reviewer wanted everywhere
    assert uids(acme, dan) == ["g0@1", "g1@1", "g2@1", "g3@1"]  # first now by its gap alone


@pytest.mark.django_db
def test_with_the_policy_off_the_queue_keeps_its_credit_order(client, acme, alice, bob, world):
    client.force_login(alice)
    page = client.get("/projects/acme/review/").content.decode()
    assert re.search(r'name="disagreements_first" checked', page)
    r = client.post("/projects/acme/review/policy/", {"overlap_percent": "0", "lease_minutes": "60", "blind": "on"})
    assert r.status_code == 302 and ReviewPolicy.objects.get(project=acme).disagreements_first is False
    old = [g.uid for g in sorted((g for g in world.values() if g.is_mixed), key=old_key)]
    assert uids(acme, bob) == old and old[-2:] == ["g0@1", "g3@1"]
    assert "disagreements first" not in client.get("/projects/acme/review/").content.decode().split("Order:")[1][:80]
    client.force_login(bob)
    assert next_group(client) == old[0]
    update_policy(project=acme, overlap=0.0, blind=True, lease_minutes=60, disagreements_first=True)
    assert uids(acme, bob)[0] == "g0@1"  # bob holds old[0]; the rest are in the split order again


@pytest.mark.django_db
def test_an_admin_sees_why_each_group_is_next_and_a_blind_reviewer_sees_none_of_it(client, acme, alice, bob, world):
    until = timezone.localtime(world["g0@1"].awaits_person_until).strftime("%H:%M")
    client.force_login(alice)
    page = client.get("/projects/acme/review/").content.decode()
    why = re.findall(r'<td data-testid="why-next">([^<]*)</td>', page)
    credit = world["g2@1"].credit_moved
    assert why == [
        f"a jury waits for you until {until}",
        "graders differ by 1 tier on 1 rollout",
        f"its verdict moves {credit:.3f} of credit (Σ|A* − A|)",
        "no grader verdict yet: by step",
    ]
    client.force_login(bob)
    page = client.get("/projects/acme/review/").content.decode()
    assert all(uid in page for uid in ("g0@1", "g1@1", "g2@1", "g3@1"))  # the same groups, in the same order
    assert page.index("g0@1") < page.index("g1@1") < page.index("g2@1")
    for text in REASON_TEXT:
        assert text not in page, text
    # On the group page: bob's banner says where the group stands, never why.
    client.post("/projects/acme/review/next/")
    html = client.get(group_url("g0@1")).content.decode()
    assert "group 1 of 4</strong> in your queue" in html
    for text in REASON_TEXT:
        assert text not in html, text


@pytest.mark.django_db
def test_the_group_banner_says_why_to_an_admin_but_not_on_a_group_they_judge_blind(client, acme, alice, world):
    client.force_login(alice)
    assign(group=world["g1@1"], reviewer=alice, blind=False)
    html = client.get(group_url("g1@1")).content.decode()
    assert '<span class="muted" data-testid="why-next">— next because graders differ by 1 tier on 1 rollout</span>' in html
    assign(group=world["g0@1"], reviewer=alice)  # the policy's default: blind
    assert Assignment.objects.get(group=world["g0@1"], reviewer=alice).is_open_blind
    html = client.get(group_url("g0@1")).content.decode()
    assert "in your queue" in html
    for text in REASON_TEXT:
        assert text not in html, text


@pytest.mark.django_db
def test_the_audit_queue_puts_the_cheat_call_graders_split_on_first(client, acme, alice, world):
    split = world["g0@1"].rollouts.get(index=3)
    agreed = world["g2@1"].rollouts.get(index=1)
    assert (split.cheat_split, agreed.cheat_split) == (True, False)
    assert CheatDecision.objects.filter(rollout=agreed).count() == 2  # both members': newer than the split one
    client.force_login(alice)

    def rows() -> list[int]:
        page = client.get("/projects/acme/audit/?status=all").content.decode()
        return [int(pk) for pk in re.findall(r'<tr id="audit-rollout-(\d+)"', page)]

    page = client.get("/projects/acme/audit/?status=all").content.decode()
    assert rows() == [split.pk, agreed.pk]
    assert f'data-testid="graders-split-{split.pk}">graders differ on this cheat call' in page
    assert f"graders-split-{agreed.pk}" not in page
    update_policy(project=acme, overlap=0.2, blind=True, lease_minutes=60, disagreements_first=False)
    assert rows() == [agreed.pk, split.pk]  # newest signal first


@pytest.mark.django_db
def test_the_queue_page_takes_the_same_queries_for_an_admin_with_reasons_however_many_groups(
    client, acme, alice, bob, world, django_assert_num_queries
):
    ReviewPolicy.objects.get_or_create(project=acme)
    client.force_login(alice)
    # session, user, project, membership, the policy, the runs, the runs' ids, the upcoming
    # groups (their reasons are in their rows: no query), my progress, my assignments, the
    # totals (2), the team (3) -- a reviewer's page less the team's three
    for round_ in range(2):
        with django_assert_num_queries(15):
            page = client.get("/projects/acme/review/").content.decode()
        assert page.count('data-testid="why-next"') == (4 if round_ == 0 else 10)
        run = Run.objects.get(name="r1")
        new = [small_group(f"x{i}@1", instance_id=f"x-{i}", rewards=(1, 1, 0, 1)) for i in range(8)]
        ingest_groups(acme, *new)
        for i in range(0, 8, 2):
            grade_pair(Group.objects.get(run=run, uid=f"x{i}@1"), A, FAR if i % 4 else NEAR)


@pytest.mark.django_db
def test_the_first_candidate_is_one_walk_of_the_index_of_its_order(acme, bob, world):
    """EXPLAIN of the candidate query names the partial index of the policy's order."""
    for on, index in ((True, "group_review_queue_split"), (False, "group_review_queue")):
        update_policy(project=acme, overlap=0.2, blind=True, lease_minutes=60, disagreements_first=on)
        query = queue_groups(project=acme, reviewer=bob, run=Run.objects.get(name="r1"))[:1]
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":  # a small table: make the planner show what it would do at scale
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute("SET LOCAL enable_sort = off")
            plan = query.explain()
        assert index in plan and "Sort Key" not in plan and "TEMP B-TREE FOR ORDER BY" not in plan.upper(), plan
    assert QUEUE_ORDER == ("-has_valid_verdict", "-credit_moved", "step_number", "uid")


@pytest.mark.django_db(transaction=True)
def test_a_jury_of_the_heuristic_and_a_posted_grader_sends_its_split_group_to_people_first(client, alice_token, acme, bob):
    """The whole way: the jury defined and named as the run's policy through the API, the
    heuristic member grading at ingest, the external member posting through
    POST /api/v1/verdicts/ -- at the other extreme of every tier on g1 only."""

    def api(method, path, body):
        return getattr(client, method)(
            f"{path}?project=acme", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {alice_token}"
        )

    jury = {"name": "pair", "members": ["heuristic@1", "ext@1"], "rule": "agree_or_abstain", "max_gap": 1, "on_abstain": "wait"}
    assert api("post", "/api/v1/juries/", jury).status_code == 201
    assert api("post", "/api/v1/runs/", {"name": "rl"}).status_code == 201
    assert api("patch", "/api/v1/runs/rl/", {"jury": "pair"}).status_code == 200
    post_groups(
        client, alice_token, *(small_group(f"g{i}", run="rl", instance_id=f"t-{i}", rewards=(1, 0, 1, 1)) for i in range(3))
    )
    for uid in ("g0", "g1", "g2"):
        heuristic = Verdict.objects.get(group__uid=uid, grader="heuristic@1")
        judgments = [
            {
                "rollout": g.rollout.index,
                "tier": ("T1" if g.tier != "T1" else "T3") if uid == "g1" else g.tier,
                "rank": g.rank,
                "scores": dict.fromkeys(RUBRIC, 3),
                "cheat": False,
            }
            for g in heuristic.grades.select_related("rollout")
        ]
        r = api("post", "/api/v1/verdicts/", {"run": "rl", "step": 1, "uid": uid, "grader": "ext@1", "judgments": judgments})
        assert r.status_code == 201, r.content
    assert Group.objects.get(uid="g1").awaits_person
    assert uids(acme, bob)[0] == "g1"
    client.force_login(bob)
    assert next_group(client) == "g1"
