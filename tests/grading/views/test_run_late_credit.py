"""The run page's "credit to cheats after export": what a trainer already took for rollouts
confirmed as cheats after it took their step (grading.method.selectors.late_cheat_credit).

alice is admin of acme; tess's token is a trainer's (export only); erin is an auditor; bob a
reviewer, who sees the figure but no link to the audit. The world (tests/helpers/late_cheats.py)
exports through GET /api/v1/advantages/, then confirms cheats by a scanner (record_prescreen)
and by erin through the audit.
"""

from __future__ import annotations

import pytest
from django.test import Client

from grading.method import selectors as method_selectors
from grading.method.selectors import late_cheat_credit
from grading.models import CheatDecision, Group, Role, Rollout, Run, StepExport
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.late_cheats import TOTAL_A, TOTAL_A_STAR, late_cheat_world, take
from tests.helpers.people import member

pytestmark = pytest.mark.django_db


@pytest.fixture
def erin(acme):
    return member("erin", acme, Role.AUDITOR)


@pytest.fixture
def world(acme, alice, bob, erin, trainer_token):
    return late_cheat_world(acme, trainer_token=trainer_token, auditor=erin)


def test_the_figure_is_what_the_trainer_took_for_the_cheats_confirmed_after(world):
    assert world["early"]["final"] == "false" and world["trained"]["final"] == "true"
    credit = late_cheat_credit(Run.objects.get(name="r1"))
    r = world["rollouts"]
    assert [s.number for s in credit.steps] == [1] and credit.unread_steps == ()
    step = credit.steps[0]
    # g1 #2 as the final export served it (T3 of the worked example), not as the earlier
    # non-final CSV had it (a fallback, 0.5); g3 #0 was served as a cheat already.
    assert {x.rollout_id: round(x.redistributed, 6) for x in step.rollouts} == {
        r["fetch"].pk: 0.319149,
        r["skip"].pk: 0.5,
        r["history"].pk: 0.5,
    }
    assert round(step.redistributed, 6) == round(TOTAL_A_STAR, 6) == 1.319149
    assert step.baseline == TOTAL_A == 1.5
    assert (credit.n_rollouts, credit.n_steps) == (3, 1)
    by = {x.rollout_id: x for x in step.rollouts}
    scanner = world["scanner"]
    assert by[r["fetch"].pk].scanner.label == f"caught later by {scanner['fetch']}"
    assert by[r["history"].pk].scanner.label == f"a scanner at the time: {scanner['history']}"
    assert by[r["skip"].pk].scanner.label == f"a scanner at the time: {scanner['skip']}"
    assert by[r["skip"].pk].scanner.found_before and not by[r["history"].pk].scanner.found_before
    assert by[r["skip"].pk].confirmed_by == "erin" and by[r["fetch"].pk].confirmed_by == scanner["fetch"]


def test_the_run_page_shows_the_figure_and_links_the_audit_to_those_rollouts(client, world, erin, django_assert_num_queries):
    r = world["rollouts"]
    client.force_login(erin)  # erin audits: the figures link to the audit
    client.get("/projects/acme/runs/r1/")  # the first visit recomputes the steps the late cheats made stale
    # session, user, project, membership, run, step count, the page of steps, their counts, active
    # mapping (2), current computations, credit chart, run totals, graded totals, import jobs; and
    # the late cheats: the rollouts, their scanner findings, when those versions first stored
    # one, the served bodies; the run's health: the trainer's metrics and the desk's four figures
    with django_assert_num_queries(25):
        page = client.get("/projects/acme/runs/r1/")
    html = page.content.decode()
    ids = f"{r['fetch'].pk},{r['skip'].pk},{r['history'].pk}"
    assert "Credit to confirmed cheats after export:" in html
    link = f'href="/projects/acme/audit/?status=all&amp;rollouts={ids}"'
    assert f'{link} data-testid="late-credit-summary-link"><strong>1.32 A*</strong>' in html
    assert "(1.50 A) over 3 rollouts in 1 step." in html
    assert f'href="/projects/acme/audit/?status=all&amp;rollouts={ids}" data-testid="late-credit-link-1">1.32 A*</a>' in html
    scanner = world["scanner"]
    assert (
        f"a scanner at the time: {scanner['history']}; a scanner at the time: {scanner['skip']}; "
        f"caught later by {scanner['fetch']}</div>"
    ) in html
    assert "confirmed by erin" in html
    assert '<td class="num" data-testid="late-credit-2"><span class="muted">–</span></td>' in html

    # The link lists those three rollouts in the audit, not g3 #0, confirmed before the export.
    audit = client.get(f"/projects/acme/audit/?status=all&rollouts={ids}")
    listed = audit.content.decode()
    for name in ("fetch", "skip", "history"):
        assert f'data-testid="audit-rollout-{r[name].pk}"' in listed
    assert f'data-testid="audit-rollout-{r["early"].pk}"' not in listed
    assert "Only the 3 rollouts a link named" in listed


def test_a_reviewer_sees_the_figure_without_a_link_to_the_audit(client, world, bob):
    client.force_login(bob)  # bob reviews; the audit is not his
    html = client.get("/projects/acme/runs/r1/").content.decode()
    assert "<strong>1.32 A*</strong>" in html and "(1.50 A) over 3 rollouts in 1 step." in html
    assert "/audit/" not in html


def test_a_run_without_late_cheats_shows_nothing_and_costs_one_query(
    client, acme, alice, trainer_token, django_assert_num_queries
):
    ingest_groups(acme, small_group("g@1", rewards=(1, 0)))
    take(Client(), trainer_token, 1, "jsonl")
    client.force_login(alice)
    client.get("/projects/acme/runs/r1/")
    # the 15 above and, as alice is admin, the policy form's graders and juries; one asks for late
    # cheats; five for the run's health
    with django_assert_num_queries(24):
        html = client.get("/projects/acme/runs/r1/").content.decode()
    assert (
        "late-credit-summary" not in html and '<td class="num" data-testid="late-credit-1"><span class="muted">–</span>' in html
    )


def _late_by_search(acme, auditor, uid: str, step: int, fmt: str, token: str) -> Rollout:
    """A graded group taken by the trainer in `fmt`, then its pass confirmed by `auditor` on a
    search signal (no scanner finding)."""
    ingest_groups(acme, small_group(uid, step=step, instance_id=f"t-{step}", rewards=(1, 0)))
    group = Group.objects.get(uid=uid)
    record_verdict(group=group, grader="test@1", status="valid", grades=[GradeInput(0, "T1", 1)])
    take(Client(), token, step, fmt)
    rollout = Rollout.objects.get(group=group, index=0)
    CheatDecision.objects.create(rollout=rollout, source="search", author=auditor.username, reason="git log --all")
    audit = Client()
    audit.force_login(auditor)
    r = audit.post(f"/projects/acme/audit/rollouts/{rollout.pk}/", {"verdict": "confirm", "reason": "reads the fix"})
    assert r.status_code == 302
    return rollout


HOSTILE_UID = "=<img src=x onerror=alert(1)>@3"


def test_a_hostile_uid_is_matched_in_csv_and_shown_escaped(client, acme, alice, erin, trainer_token):
    # A uid that starts a formula is served in CSV with a leading quote; its row is still found.
    rollout = _late_by_search(acme, erin, HOSTILE_UID, 3, "csv", trainer_token)
    credit = late_cheat_credit(Run.objects.get(name="r1"))
    assert [(s.number, s.rollout_ids, s.redistributed, s.baseline) for s in credit.steps] == [(3, [rollout.pk], 0.5, 0.5)]
    assert credit.steps[0].scanner_notes == [("no scanner finding", 1)]
    client.force_login(alice)
    html = client.get("/projects/acme/runs/r1/").content.decode()
    assert "<img src=x" not in html and "=&lt;img src=x onerror=alert(1)&gt;@3</code> #0: 0.500 A*" in html


def test_steps_past_the_read_budget_and_unreadable_bodies_are_named_not_counted(
    client, acme, alice, erin, trainer_token, monkeypatch
):
    _late_by_search(acme, erin, "a@1", 1, "jsonl", trainer_token)
    _late_by_search(acme, erin, "b@2", 2, "parquet", trainer_token)
    _late_by_search(acme, erin, "c@3", 3, "csv", trainer_token)
    StepExport.objects.filter(step__number=3).update(body=b"\x00not,a\ncsv")  # a served body that does not parse
    monkeypatch.setattr(method_selectors, "MAX_SERVED_READ", 2)
    credit = late_cheat_credit(Run.objects.get(name="r1"), read_first=[2, 3])
    assert [s.number for s in credit.steps] == [2] and credit.unread_steps == (1, 3)
    client.force_login(alice)
    page = client.get("/projects/acme/runs/r1/")
    assert page.status_code == 200
    html = page.content.decode()  # the page's steps in order: 1 and 2 read, 3 left
    assert "(1.00 A) over 2 rollouts in 2 steps;" in html and "1 more step with a late cheat not read here (step 3)" in html
    assert '<td class="num" data-testid="late-credit-3"><span class="muted" title=' in html
