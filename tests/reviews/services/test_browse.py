"""Browsing and judging on the review desk, through the pages and in the database:

- a reviewer who opens a graded group outside an assignment sees no grader field until they
  choose: "Judge this group blind" (an Assignment, where the queue's rules allow) or "Show
  the grader's verdict" (a Reveal; the queue never serves it to them after); admins,
  auditors and adjudicators see the verdict (logged);
- the project's rubric guide on the judge panel (tooltips and the `?` panel);
- Submit and next; judgments posted through htmx answer with HX-Redirect;
- adjudication drafts, kept server-side and cleared on submit.
People and groups: tests/reviews/conftest.py.
"""

from __future__ import annotations

import re

import pytest

from grading.method.guide import DEFAULT_GUIDE
from grading.method.project_guides import save_guide
from grading.method.tiers import TIERS
from reviews.models import AdjudicationDraft, Assignment, Judgment, Reveal
from reviews.selectors.lanes import lanes_for
from reviews.selectors.queue import queue_groups
from reviews.services.browse import ClaimRefused, claim_blind
from reviews.services.queue import assign, skip_assignment, update_policy
from tests.helpers.desk import GRADER, SECRET_NOTE, as_lanes, group_url, judgment_post

pytestmark = pytest.mark.django_db

TIER_BADGE = re.compile(r"badge tier-T\d")
GOOD = {0: "T1", 1: "T2", 3: "T3"}


def page(client, uid="g1@1", **headers) -> str:
    r = client.get(group_url(uid), **headers)
    assert r.status_code == 200
    return r.content.decode()


def no_grader_field(html: str) -> None:
    assert GRADER not in html and SECRET_NOTE not in html and "read the fix" not in html
    assert not TIER_BADGE.search(html) and 'class="verdict"' not in html and "grader says" not in html


# --- blindness survives browsing -------------------------------------------------------------------


def test_a_reviewer_browsing_sees_no_grader_field_until_they_choose(client, bob, groups):
    client.force_login(bob)
    html = page(client)
    no_grader_field(html)
    assert "Judge this group blind" in html and "Show the grader's verdict" in html
    assert 'data-confirm="confirm-show"' in html  # asked in a <dialog> first (static/js/judge.js)
    for part in ("rollouts/1/diff/", "rollouts/1/turns/", "rollouts/3/log/", "compare/?a=0&b=1"):
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            r = client.get(group_url("g1@1", part), **headers)
            assert r.status_code == 200, part
            no_grader_field(r.content.decode())
    assert not Reveal.objects.filter(user=bob).exists() and not Assignment.objects.filter(reviewer=bob).exists()


def test_judge_blind_assigns_the_group_blind(client, bob, groups):
    client.force_login(bob)
    r = client.post(group_url("g1@1", "judge-blind/"))
    assert r.status_code == 302 and r["Location"] == group_url("g1@1")
    assignment = Assignment.objects.get(reviewer=bob, group=groups["g1@1"])
    assert assignment.is_open and assignment.blind and sorted(assignment.order) == [0, 1, 2, 3]
    html = page(client)
    no_grader_field(html)
    assert 'data-testid="blind-badge"' in html and "Submit judgment" in html and "Judge this group blind" not in html
    client.post(group_url("g1@1", "judge-blind/"))  # again: the same assignment, not a second one
    assert Assignment.objects.filter(reviewer=bob).count() == 1
    client.post(group_url("g1@1", "judgment/"), as_lanes(judgment_post(GOOD), client, "g1@1"))
    assert Judgment.objects.get(reviewer=bob).blind


def test_show_verdict_is_a_reveal_and_takes_the_group_out_of_the_queue(client, bob, groups, acme):
    assert groups["g1@1"] in set(queue_groups(project=acme, reviewer=bob))
    client.force_login(bob)
    r = client.post(group_url("g1@1", "show-verdict/"), follow=True)
    html = r.content.decode()
    assert GRADER in html and SECRET_NOTE in html and "will not be served to you" in html
    reveal = Reveal.objects.get(user=bob, group=groups["g1@1"])
    assert reveal.reason == Reveal.Reason.BROWSE and reveal.verdict.grader == GRADER
    assert groups["g1@1"] not in set(queue_groups(project=acme, reviewer=bob))
    page(client)  # shown again: no second reveal, no choice
    assert Reveal.objects.filter(user=bob).count() == 1
    with pytest.raises(ClaimRefused, match="seen the grader's verdict"):
        claim_blind(group=groups["g1@1"], reviewer=bob)
    r = client.post(group_url("g1@1", "judge-blind/"), follow=True)
    assert "You cannot judge g1@1 blind: you have seen the grader" in r.content.decode()
    assert not Assignment.objects.filter(reviewer=bob).exists()


def test_judge_blind_follows_the_queue_rules_and_says_why_not(client, bob, dan, groups, acme):
    update_policy(project=acme, overlap=0.0, blind=True, lease_minutes=60)  # one reviewer per group
    assign(group=groups["g1@1"], reviewer=dan)
    client.force_login(bob)
    html = page(client)
    no_grader_field(html)
    assert "You cannot judge it blind: it already has the reviewers it wants" in html
    assert client.post(group_url("g1@1", "judge-blind/")).status_code == 302
    assert not Assignment.objects.filter(reviewer=bob).exists()
    # Never served twice: a group bob skipped is not his again.
    mine = assign(group=groups["g2@1"], reviewer=bob)
    skip_assignment(assignment=mine)
    with pytest.raises(ClaimRefused, match="you skipped this group"):
        claim_blind(group=groups["g2@1"], reviewer=bob)
    assert "you skipped this group" in page(client, "g2@1")
    # Not mixed: nothing to judge, and no choice offered.
    assert "Judge this group blind" not in page(client, "g3@1")


@pytest.mark.parametrize("who", ["alice", "erin", "fay"])  # admin, auditor, adjudicator
def test_roles_whose_work_needs_the_verdict_see_it_logged(client, request, groups, who):
    person = request.getfixturevalue(who)
    client.force_login(person)
    html = page(client)
    assert GRADER in html and "Judge this group blind" not in html
    assert Reveal.objects.get(user=person).reason == Reveal.Reason.BROWSE


def test_a_project_that_does_not_judge_blind_shows_the_verdict(client, bob, groups, acme):
    update_policy(project=acme, overlap=0.2, blind=False, lease_minutes=60)
    client.force_login(bob)
    assert GRADER in page(client)


# --- the rubric guide on the judge panel ---------------------------------------------------------------


def test_the_judge_panel_explains_tiers_and_scores_with_the_projects_guide(client, bob, alice, groups, acme):
    fields = {f"tier-{t}": DEFAULT_GUIDE.tier(t) for t in TIERS}
    for d in DEFAULT_GUIDE.dimensions:
        fields[f"meaning-{d.name}"], fields[f"example-{d.name}"] = d.meaning, d.example
    fields["tier-T2"] = "T2-EDITED: fine, but a reviewer would ask for one change"
    fields["meaning-codebase_consistency"] = "CONSISTENCY-EDITED: reads like the code around it"
    save_guide(project=acme, user=alice, data=fields)
    assign(group=groups["g2@1"], reviewer=bob)
    client.force_login(bob)
    html = page(client, "g2@1")
    assert 'title="T2: T2-EDITED: fine, but a reviewer would ask for one change"' in html  # the tier buttons' tooltips
    assert re.search(r'<label class="score" title="Codebase consistency \(1–5, 5 best\): CONSISTENCY-EDITED', html)
    help_panel = html[html.index('id="keys-help"') :]
    assert "T2-EDITED" in help_panel and "CONSISTENCY-EDITED" in help_panel and "Shift</kbd>+<kbd>S" in help_panel


# --- submit and next; htmx submits ---------------------------------------------------------------


def test_submit_and_next_stores_the_judgment_and_opens_the_next_group(client, bob, groups, acme):
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    client.force_login(bob)
    client.post("/projects/acme/review/next/")
    first = Assignment.objects.get(reviewer=bob)
    r = client.post(group_url(first.group.uid, "judgment/"), as_lanes(judgment_post(GOOD, then="next"), client, first.group.uid))
    assert Judgment.objects.get(reviewer=bob).group == first.group
    second = Assignment.objects.get(reviewer=bob, status=Assignment.Status.OPEN)
    assert second.group != first.group and r.status_code == 302 and r["Location"] == group_url(second.group.uid)
    # through htmx, as the page sends it: 204 and HX-Redirect; the last one goes back to the queue
    r = client.post(
        group_url(second.group.uid, "judgment/"),
        as_lanes(judgment_post(GOOD, then="next"), client, second.group.uid),
        HTTP_HX_REQUEST="true",
    )
    assert r.status_code == 204 and r["HX-Redirect"] == "/projects/acme/review/"
    assert Judgment.objects.filter(reviewer=bob).count() == 2
    assert not Assignment.objects.filter(reviewer=bob, status=Assignment.Status.OPEN).exists()


def test_an_htmx_submit_that_is_refused_keeps_what_was_typed(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    r = client.post(
        group_url("g1@1", "judgment/"),
        as_lanes(judgment_post({0: "T1", 1: "T2"}, **{"note-0": "keep me"}), client, "g1@1"),
        HTTP_HX_REQUEST="true",
    )
    assert r.status_code == 204 and r["HX-Redirect"] == group_url("g1@1")
    assert not Judgment.objects.exists()
    draft = Assignment.objects.get(reviewer=bob).draft
    assert draft["tier-0"] == "T1" and draft["tier-1"] == "T2" and draft["note-0"] == "keep me"
    html = page(client)
    c = lanes_for(user=bob, group=groups["g1@1"]).key(3)  # a blind judge is told about rollouts by their labels
    assert "The judgment was not stored" in html and f"rollout {c} passed and needs a tier" in html
    assert 'value="T1" checked' in html


def test_reveal_early_keeps_the_draft_it_was_sent_and_an_empty_one_does_not_wipe_it(client, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    client.force_login(bob)
    client.post(group_url("g1@1", "draft/"), as_lanes({"tier-0": "T2"}, client, "g1@1"))
    client.post(group_url("g1@1", "reveal/"))  # no fields sent: the autosaved draft stays
    assignment = Assignment.objects.get(reviewer=bob)
    assert assignment.draft == {"tier-0": "T2"} and assignment.revealed_early


# --- adjudication drafts ----------------------------------------------------------------------------


def test_adjudication_drafts_survive_reopening_and_are_cleared_on_submit(client, fay, judged):
    client.force_login(fay)
    assert "Record final ranking" in page(client, "g1@1")
    r = client.post(group_url("g1@1", "adjudication/draft/"), {"tier-0": "T2", "tier-1": "T1", "reason": "tie", "note": "so far"})
    assert r.status_code == 200 and "saved_at" in r.json()
    draft = AdjudicationDraft.objects.get(user=fay, group=judged["g1@1"])
    assert draft.data == {"tier-0": "T2", "tier-1": "T1", "reason": "tie", "note": "so far"}
    html = page(client, "g1@1")
    assert re.search(r'name="tier-0" value="T2" checked', html) and re.search(r'name="tier-1" value="T1" checked', html)
    assert '<option value="tie" selected>' in html and ">so far</textarea>" in html
    assert 'data-draft-url="/projects/acme/runs/r1/groups/g1@1/adjudication/draft/"' in html
    r = client.post(group_url("g1@1", "adjudication/"), judgment_post({0: "T2", 1: "T1", 3: "T3"}, reason="tie"))
    assert r.status_code == 302
    assert Judgment.objects.filter(kind=Judgment.Kind.ADJUDICATION).count() == 1
    assert not AdjudicationDraft.objects.exists()


def test_a_party_cannot_keep_an_adjudication_draft(client, bob, judged):
    client.force_login(bob)  # bob reviewed g1: a party to its dispute (and a reviewer: no adjudicate capability)
    assert client.post(group_url("g1@1", "adjudication/draft/"), {"tier-0": "T1"}).status_code == 403
    assert not AdjudicationDraft.objects.exists()
