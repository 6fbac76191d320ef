"""Blind side doors: no grader-derived figure reaches a person who
still has to judge a group blind, and adjudication happens only where it is needed, never by
a party to the dispute.

Like the IDOR matrix in test_security.py, the doors are enumerated from the URL resolver: a
new page or API is in the matrix the day it lands. For every GET route (as a page and as an
htmx partial) and every role that can hold a blind assignment, the person holding an open
blind assignment on g1 sees none of: g1's grader name, its evidence, tier badges on g1's
pages, and the rollouts where the grader and a reviewer disagree. The agreement figures are
then checked by count: none of them includes g1.

World: run r1, step 1; g1@1 graded by BLIND_GRADER (evidence notes carry SECRET), g2@1 graded
by OPEN_GRADER, g3@1 ungraded. dan reviewed g1 a tier from the grader on #1 (so g1 waits for
an adjudicator, "dan vs grader") and g2 in full agreement; g3 nobody reviewed.
"""

from __future__ import annotations

import re

import pytest

from grading.models import Group, Role
from grading.verdicts.store import GradeInput, record_verdict
from reviews.models import Assignment, GroupReview, Judgment, Reveal
from reviews.selectors.adjudication import AdjudicationRefused
from reviews.selectors.lanes import lanes_for
from reviews.selectors.queue import queue_groups
from reviews.services.judgments import ItemInput, submit_judgment
from reviews.services.queue import assign, skip_assignment, update_policy
from tests.helpers.desk import as_lanes
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member
from tests.helpers.routes import DOOR_QUERY, QUERY, doors

pytestmark = pytest.mark.django_db

BLIND_GRADER = "blind-grader@7"
OPEN_GRADER = "open-grader@1"
SECRET = "BLIND-DOOR-SECRET"
# Text that only a grader field on g1 can put into a response.
FORBIDDEN = (
    BLIND_GRADER,
    SECRET,
    "vs grader",
    "grader says",
    "grader agrees",
    "tiers differ on",
    'data-sort="tier"',
    "data-tier=",
    'data-testid="why-next"',
)  # the two before last: the group overview's grader columns; the last: why a group is next
TIER_BADGE = re.compile(r"badge tier-T\d")
G1_TIERS = {0: "T1", 1: "T2", 3: "T3"}


def items(tiers: dict[int, str]) -> list[ItemInput]:
    return [ItemInput(i, t) for i, t in tiers.items()]


def post(tiers: dict[int, str], **extra) -> dict:
    return {**{f"tier-{i}": t for i, t in tiers.items()}, "seen_version": "0", **extra}


@pytest.fixture
def people(acme, alice, bob):
    return {
        "alice": alice,
        "bob": bob,
        "dan": member("dan", acme, Role.REVIEWER),
        "erin": member("erin", acme, Role.AUDITOR),
        "fay": member("fay", acme, Role.ADJUDICATOR),
        "gus": member("gus", acme, Role.ADJUDICATOR),
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
        grader=BLIND_GRADER,
        status="valid",
        grades=[
            GradeInput(0, "T1", 1, evidence=[{"kind": "patch", "rollout": 0, "locator": "w.py:2", "note": SECRET}]),
            GradeInput(1, "T2", 2, evidence=[{"kind": "turn", "rollout": 1, "locator": "1", "note": SECRET}]),
            GradeInput(3, "T3", 3, cheat=True, evidence=[{"kind": "turn", "rollout": 3, "locator": "1", "note": SECRET}]),
        ],
    )
    record_verdict(
        group=g["g2@1"],
        grader=OPEN_GRADER,
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T1", 1), GradeInput(3, "T2", 2)],
    )
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    for group, tiers in ((g["g1@1"], {0: "T1", 1: "T3", 3: "T3"}), (g["g2@1"], {0: "T1", 1: "T1", 3: "T2"})):
        assign(group=group, reviewer=people["dan"])
        submit_judgment(reviewer=people["dan"], group=group, items=items(tiers))
    review = GroupReview.objects.get(group=g["g1@1"])
    assert review.needs_adjudication and any(d["between"] == ["dan", "grader"] for d in review.disagreement)
    assert not GroupReview.objects.get(group=g["g2@1"]).needs_adjudication
    return g


def test_the_matrix_covers_the_doors_that_show_grader_data(world):
    names = {name for name, _ in doors()}
    for expected in (
        "group",
        "rollout-diff",
        "rollout-extra-files",
        "rollout-turns",
        "rollout-log",
        "patch-compare",
        "step",
        "step-grading",
        "run",
        "review-queue",
        "adjudication-queue",
        "audit-queue",
        "calibration",
        "api-agreement",
        "api-group",
        "api-groups",
        "api-labeled-groups",
        "api-advantages",
        "api-step",
        "search",
        "api-search",
    ):
        assert expected in names, expected


@pytest.mark.parametrize("who", ["bob", "erin", "fay"])  # reviewer, auditor, adjudicator
def test_no_door_shows_grader_data_to_a_blind_judge(client, people, world, who):
    assign(group=world["g1@1"], reviewer=people[who])
    assert Assignment.objects.get(group=world["g1@1"], reviewer=people[who]).blind
    client.force_login(people[who])
    opened = 0
    lanes = lanes_for(user=people[who], group=world["g1@1"])  # a blind judge names rollouts by their labels
    compare = f"&a={lanes.key(0)}&b={lanes.key(1)}"
    for name, url in doors(lanes.key(1)):
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            r = client.get(url + QUERY + DOOR_QUERY.get(name, "") + compare, **headers)
            if r.status_code in (403, 404, 405):  # a door this role does not have (or a POST-only one)
                continue
            assert r.status_code in (200, 302), (who, name, r.status_code)
            body = (b"".join(r.streaming_content) if r.streaming else r.content).decode()
            opened += 1
            for text in FORBIDDEN:
                assert text not in body, (who, name, text)
            if "g1@1" in url:
                assert not TIER_BADGE.search(body), (who, name)
    assert opened >= 20
    assert not Reveal.objects.filter(user=people[who], group=world["g1@1"]).exists()
    assert Judgment.objects.filter(group=world["g1@1"], reviewer=people[who]).count() == 0


# Text only "why this group is next" (reviews.selectors.queue.why_next) can put on a page.
WHY_NEXT = ("graders differ by", "a jury waits for you", "of credit (Σ|A* − A|)", 'data-testid="why-next"')


def test_no_door_says_why_a_group_is_next_to_a_blind_judge_and_an_admin_is_told(client, people, world):
    """Why the queue serves a group next is derived from its graders' verdicts: with a second
    grader two tiers from the first on g1 and g2, an admin is told on the queue page; a
    reviewer, an auditor and an adjudicator holding a blind assignment on g1 read it on no
    door, and neither does the admin on g1's page while judging it blind."""
    for uid in ("g1@1", "g2@1"):
        record_verdict(
            group=world[uid],
            grader="second-grader@1",
            status="valid",
            grades=[GradeInput(0, "T3", 3), GradeInput(1, "T2", 2), GradeInput(3, "T1", 1)],
        )
    assert Group.objects.get(uid="g2@1").grader_gap == 2
    client.force_login(people["alice"])
    assert "graders differ by 2 tiers on 1 rollout" in client.get("/projects/acme/review/").content.decode()
    for who in ("bob", "erin", "fay"):
        assign(group=world["g1@1"], reviewer=people[who])
        client.force_login(people[who])
        lanes = lanes_for(user=people[who], group=world["g1@1"])
        compare = f"&a={lanes.key(0)}&b={lanes.key(1)}"
        opened = 0
        for name, url in doors(lanes.key(1)):
            for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
                r = client.get(url + QUERY + DOOR_QUERY.get(name, "") + compare, **headers)
                if r.status_code in (403, 404, 405):
                    continue
                body = (b"".join(r.streaming_content) if r.streaming else r.content).decode()
                opened += 1
                for text in WHY_NEXT:
                    assert text not in body, (who, name, text)
        assert opened >= 20
    assign(group=world["g1@1"], reviewer=people["alice"])
    client.force_login(people["alice"])
    page = client.get("/projects/acme/runs/r1/groups/g1@1/").content.decode()
    assert "in your queue" in page
    for text in WHY_NEXT:
        assert text not in page, text


def test_no_door_shows_grader_data_to_a_reviewer_browsing_outside_an_assignment(client, acme, world):
    """A reviewer (the role) with no assignment on g1 who opens it from anywhere --
    the run and step pages, a link, any partial, as a page or as htmx -- sees no grader field
    of g1 until they choose; the choice is offered on the group page. Nothing is logged
    before the choice; "Show the grader's verdict" is the Reveal that shows it."""
    hal = member("hal", acme, Role.REVIEWER)
    client.force_login(hal)
    opened, choice = 0, 0
    for name, url in doors():
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            r = client.get(url + QUERY + DOOR_QUERY.get(name, ""), **headers)
            if r.status_code in (403, 404, 405):
                continue
            assert r.status_code in (200, 302), (name, r.status_code)
            body = (b"".join(r.streaming_content) if r.streaming else r.content).decode()
            opened += 1
            if "g1@1" in url:
                for text in (BLIND_GRADER, SECRET):
                    assert text not in body, (name, text)
                assert not TIER_BADGE.search(body), name
            choice += "Judge this group blind" in body
    assert opened >= 20 and choice == 2  # the group page, as a page and through htmx
    assert not Reveal.objects.filter(user=hal).exists() and not Assignment.objects.filter(reviewer=hal).exists()
    client.post("/projects/acme/runs/r1/groups/g1@1/show-verdict/")
    assert Reveal.objects.get(user=hal, group=world["g1@1"]).reason == Reveal.Reason.BROWSE
    page = client.get("/projects/acme/runs/r1/groups/g1@1/").content.decode()
    assert BLIND_GRADER in page and SECRET in page


def _g2_wants_nobody_more(world, people) -> None:
    """gus reviews g2 too: it has the two reviewers it wants, so the queue serves it to nobody
    and it counts in everyone's figures (tests/hostile/test_blind_figures.py: a group the
    queue may still serve a person counts in none of theirs)."""
    assign(group=world["g2@1"], reviewer=people["gus"])
    submit_judgment(reviewer=people["gus"], group=world["g2@1"], items=items({0: "T1", 1: "T1", 3: "T2"}))


@pytest.mark.parametrize("who", ["bob", "fay"])
def test_agreement_figures_leave_out_the_callers_blind_group(client, people, world, who):
    _g2_wants_nobody_more(world, people)
    client.force_login(people["alice"])  # an admin without an assignment: everything counts
    full = client.get("/api/v1/agreement/?project=acme&step=1&slices=true&n_boot=0").json()
    assert full["grader_versions"] == {BLIND_GRADER: 1, OPEN_GRADER: 1}  # one version's figures, never pooled
    assert full["n_groups"] == 1 and full["graders"] == [BLIND_GRADER]  # the first of two that graded one group each
    assert [(s["value"], s["n_groups"]) for s in full["slices"] if s["slice"] == "grader"] == [
        (BLIND_GRADER, 1),
        (OPEN_GRADER, 1),
    ]
    assign(group=world["g1@1"], reviewer=people[who])
    client.force_login(people[who])
    for query in ("", "&step=1", "&run=r1", "&grader=" + BLIND_GRADER):
        body = client.get("/api/v1/agreement/?project=acme&slices=true&n_boot=0" + query).json()
        assert body["withheld_open_blind_groups"] == 1
        assert body["graders"] == ([] if "grader=" in query else [OPEN_GRADER]), query
        assert body["grader_versions"] == {OPEN_GRADER: 1}, query
        for row in [body, *body["slices"]]:  # every slice counts g2's three rollouts at most
            assert row["n_groups"] <= 1 and sum(map(sum, row["confusion"])) <= 3, (query, row.get("slice"), row.get("value"))
        assert all(t["grader_t1_share"] in (None, pytest.approx(2 / 3, abs=1e-5)) for t in body["by_step"])
    # Once they submit, the group counts again for them.
    submit_judgment(reviewer=people[who], group=world["g1@1"], items=items(G1_TIERS))
    body = client.get("/api/v1/agreement/?project=acme&step=1&slices=true&n_boot=0").json()
    assert body["withheld_open_blind_groups"] == 0 and body["grader_versions"] == {BLIND_GRADER: 1, OPEN_GRADER: 1}
    assert [(s["value"], s["n_groups"]) for s in body["slices"] if s["slice"] == "grader"] == [
        (BLIND_GRADER, 1),
        (OPEN_GRADER, 1),
    ]


def test_calibration_page_leaves_out_the_viewers_blind_group(client, people, world):
    _g2_wants_nobody_more(world, people)
    assign(group=world["g1@1"], reviewer=people["bob"])
    client.force_login(people["bob"])
    page = client.get("/projects/acme/calibration/?run=r1&step=1").content.decode()
    assert BLIND_GRADER not in page and OPEN_GRADER in page


def test_adjudication_reasons_are_withheld_from_a_blind_judge(client, people, world):
    assign(group=world["g1@1"], reviewer=people["fay"])
    client.force_login(people["fay"])
    page = client.get("/projects/acme/adjudication/").content.decode()
    assert "g1@1" in page and "withheld: you are judging this group blind" in page
    assert "vs grader" not in page and "#1" not in page
    assert not Reveal.objects.filter(user=people["fay"]).exists()


def test_shown_reasons_are_a_reveal_and_the_group_is_never_served_blind_after(client, people, world, acme):
    fay = people["fay"]
    client.force_login(fay)
    page = client.get("/projects/acme/adjudication/").content.decode()
    assert "dan vs grader" in page and "#1" in page
    reveal = Reveal.objects.get(user=fay, group=world["g1@1"])
    assert reveal.reason == Reveal.Reason.BROWSE and reveal.verdict.grader == BLIND_GRADER
    client.get("/projects/acme/adjudication/")  # seen once, logged once
    assert Reveal.objects.filter(user=fay, group=world["g1@1"]).count() == 1
    assert world["g1@1"] not in set(queue_groups(project=acme, reviewer=fay))
    assert world["g2@1"] in set(queue_groups(project=acme, reviewer=fay))
    assert not assign(group=world["g1@1"], reviewer=fay).blind  # an admin's hand-out is not blind either
    # Even an assignment forced blind stores a judgment that is not.
    Assignment.objects.filter(group=world["g1@1"], reviewer=fay).update(blind=True)
    judgment = submit_judgment(reviewer=fay, group=world["g1@1"], items=items(G1_TIERS)).judgment
    assert not judgment.blind


def test_the_audit_queue_keeps_a_blind_groups_signals_from_its_judge(client, people, world):
    from grading.models import CheatDecision

    flag = CheatDecision.objects.get(rollout__group=world["g1@1"], source=CheatDecision.Source.GRADER)
    assign(group=world["g1@1"], reviewer=people["erin"])
    client.force_login(people["erin"])
    page = client.get("/projects/acme/audit/?status=all").content.decode()
    assert "g1@1" not in page and SECRET not in page
    r = client.post(
        f"/projects/acme/audit/rollouts/{flag.rollout_id}/", {"verdict": "confirm", "reason": "saw it"}, HTTP_HX_REQUEST="true"
    )
    assert r.status_code == 404 and SECRET not in r.content.decode()
    client.post(
        "/projects/acme/runs/r1/groups/g1@1/judgment/", as_lanes(post(G1_TIERS), client, "g1@1")
    )  # judged: the signal is theirs to audit
    assert SECRET in client.get("/projects/acme/audit/?status=all").content.decode()


# --- adjudication integrity -------------------------------------------------------------


def adjudicate(client, uid: str, reason: str = "grader_wrong"):
    return client.post(f"/projects/acme/runs/r1/groups/{uid}/adjudication/", post(G1_TIERS, reason=reason))


def test_adjudication_only_where_the_queue_says_it_is_needed(client, people, world):
    client.force_login(people["gus"])
    for uid, why in (("g3@1", "nobody has reviewed it yet"), ("g2@1", "no two of its raters disagree")):
        r = adjudicate(client, uid)
        body = r.content.decode()
        assert r.status_code == 409 and "does not wait for an adjudicator" in body and why in body, uid
        assert "Record final ranking" not in client.get(f"/projects/acme/runs/r1/groups/{uid}/?mode=adjudicate").content.decode()
    assert not Judgment.objects.filter(kind=Judgment.Kind.ADJUDICATION).exists()
    assert "Record final ranking" in client.get("/projects/acme/runs/r1/groups/g1@1/?mode=adjudicate").content.decode()
    assert adjudicate(client, "g1@1").status_code == 302
    assert Judgment.objects.get(kind=Judgment.Kind.ADJUDICATION).reviewer == people["gus"]
    r = adjudicate(client, "g1@1", reason="tie")  # settled: the conflict names who settled it
    assert r.status_code == 409 and "gus" in r.content.decode()
    with pytest.raises(AdjudicationRefused) as refused:  # the service refuses as well, under the group's lock
        submit_judgment(
            reviewer=people["fay"], group=world["g3@1"], items=items(G1_TIERS), kind=Judgment.Kind.ADJUDICATION, reason="tie"
        )
    assert refused.value.status == 409


def test_a_party_to_the_dispute_cannot_settle_it(client, people, world):
    fay = people["fay"]
    # fay holds an open assignment on g1: she is about to be a party
    assign(group=world["g1@1"], reviewer=fay)
    client.force_login(fay)
    r = adjudicate(client, "g1@1")
    assert r.status_code == 403 and "a party to the dispute cannot settle it" in r.content.decode()
    # she reviews it (disagreeing with dan and the grader), and still may not settle it
    client.post("/projects/acme/runs/r1/groups/g1@1/judgment/", as_lanes(post({0: "T3", 1: "T1", 3: "T2"}), client, "g1@1"))
    assert Judgment.objects.filter(group=world["g1@1"], reviewer=fay, kind=Judgment.Kind.REVIEW).exists()
    assert GroupReview.objects.get(group=world["g1@1"]).needs_adjudication
    page = client.get("/projects/acme/runs/r1/groups/g1@1/?mode=adjudicate").content.decode()
    assert "Record final ranking" not in page
    r = adjudicate(client, "g1@1")
    assert r.status_code == 403 and "a party to the dispute cannot settle it" in r.content.decode()
    with pytest.raises(AdjudicationRefused) as refused:
        submit_judgment(reviewer=fay, group=world["g1@1"], items=items(G1_TIERS), kind=Judgment.Kind.ADJUDICATION, reason="tie")
    assert refused.value.status == 403
    assert not Judgment.objects.filter(kind=Judgment.Kind.ADJUDICATION).exists()
    client.force_login(people["gus"])  # someone outside the dispute can
    assert adjudicate(client, "g1@1").status_code == 302


# --- the labeled export (exporters who also judge) -------------------------------------------------


def test_an_exporter_with_open_blind_assignments_gets_409_and_a_trainer_token_does_not(client, people, world, trainer_token):
    alice = people["alice"]  # admin: may export, and may be handed groups to judge
    assign(group=world["g1@1"], reviewer=alice)
    assign(group=world["g2@1"], reviewer=alice)
    assert Assignment.objects.filter(reviewer=alice, blind=True, status=Assignment.Status.OPEN).count() == 2
    client.force_login(alice)
    url = "/api/v1/labeled-groups/?project=acme&run=r1"
    for query in ("", "&format=sft", "&label=adjudicated"):
        r = client.get(url + query)
        assert r.status_code == 409, query
        body = r.json()
        assert body["open_blind_assignments"] == 2
        assert "2 open blind assignments" in body["detail"] and "submit or skip" in body["detail"]
        assert "token" in body["detail"] and BLIND_GRADER not in r.content.decode()
    # A trainer's token has no assignments: the export is unaffected, grader fields and all.
    r = client.get("/api/v1/labeled-groups/?run=r1", HTTP_AUTHORIZATION=f"Token {trainer_token}")
    assert r.status_code == 200 and b"g1@1" in b"".join(r.streaming_content)
    # Submitting one leaves one; skipping the other (or submitting it) opens the export again.
    client.post("/projects/acme/runs/r1/groups/g1@1/judgment/", as_lanes(post(G1_TIERS), client, "g1@1"))
    r = client.get(url)
    assert r.status_code == 409 and "1 open blind assignment " in r.json()["detail"]
    skip_assignment(assignment=Assignment.objects.get(reviewer=alice, group=world["g2@1"]))
    r = client.get(url)
    assert r.status_code == 200 and b"g1@1" in b"".join(r.streaming_content)


def _overview(body: str) -> str:
    start = body.index('data-testid="overview"')
    return body[start : body.index("</details>", start)]


@pytest.mark.parametrize("who", ["bob", "erin", "fay"])  # reviewer, auditor, adjudicator
def test_the_group_overview_has_no_grader_field_until_the_judgment_is_submitted(client, people, world, who):
    """The overview at the top of the group page (a row per rollout, sortable by
    its columns) has no grader tier or rank column, value or badge for a blind judge, as a
    page or as the htmx swap; once they submit, the same overview shows both."""
    assign(group=world["g1@1"], reviewer=people[who])
    client.force_login(people[who])
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        overview = _overview(client.get("/projects/acme/runs/r1/groups/g1@1/", **headers).content.decode())
        assert f'data-testid="overview-row-{lanes_for(user=people[who], group=world["g1@1"]).key(3)}"' in overview
        for text in (*FORBIDDEN, "grader tier", "data-rank=", 'data-sort="rank"'):
            assert text not in overview, (who, text)
        assert not TIER_BADGE.search(overview)
    r = client.post("/projects/acme/runs/r1/groups/g1@1/judgment/", as_lanes(post(G1_TIERS), client, "g1@1"))
    assert r.status_code == 302, r.content
    overview = _overview(client.get("/projects/acme/runs/r1/groups/g1@1/").content.decode())
    assert "grader tier" in overview and 'data-tier="T3"' in overview and 'data-rank="3"' in overview
    assert '<span class="badge tier-T3">T3</span>' in overview


def test_campaigns_show_an_admin_judging_blind_counts_and_costs_never_a_verdict(
    client, people, world, django_capture_on_commit_callbacks
):
    """Campaigns are an admin's (every other role is refused at the door, above); an admin who
    holds a blind assignment on g1 sees on them how many groups a grader graded and what it
    cost, never a tier, a rank or evidence, nor the grader that graded g1."""
    alice = people["alice"]
    assign(group=world["g1@1"], reviewer=alice)
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(
            "/api/v1/campaigns/?project=acme", {"grader": "heuristic", "scope": {"run": "r1"}}, content_type="application/json"
        )
    assert r.status_code == 202
    assert client.get(f"/api/v1/campaigns/{r.json()['id']}/?project=acme").json()["counts"]["graded"] == 3
    for url in ("/api/v1/campaigns/?project=acme", f"/api/v1/campaigns/{r.json()['id']}/?project=acme"):
        body = client.get(url).content.decode()
        assert not re.search(r"\bT[123]\b|\brank\b|evidence", body), url
        for text in FORBIDDEN:
            assert text not in body, (url, text)
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        page = client.get("/projects/acme/calibration/campaigns/", **headers).content.decode()
        assert 'data-status="done"' in page and not TIER_BADGE.search(page) and not re.search(r"\bT[123]\b", page)
        for text in FORBIDDEN:
            assert text not in page, text
