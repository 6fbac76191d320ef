"""The cheat audit by rollout in Chromium, on groups built from the vendored real trajectories.

erin (auditor) audits real-long-00 #2, which carries the grader's, the prescreen's and bob's
signals (tests/reviews/views/test_audit.py builds the world), then decides a prescreen rule
in bulk. Every wait is on a marker the page sets (a row's data-state, the counts' text).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grading.models import CheatDecision
from reviews.models import CheatAudit
from tests.helpers.audit_world import BOB_NOTE, GRADER, GRADER_NOTE, audit_world, reward
from tests.helpers.browser import log_in, watch_dialogs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(acme, alice, bob, erin):
    return audit_world(acme, reviewer=bob, auditor=erin)


def test_auditor_settles_a_rollout_of_three_signals_with_one_decision(live_server, page, erin, world):
    x, y = world["x"], world["y"]
    signals = {s.source: s for s in CheatDecision.objects.filter(rollout=x)}
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "erin", "/projects/acme/audit/")
    expect(page.get_by_test_id("filter-pending")).to_have_text("pending (3)")
    row = page.get_by_test_id(f"audit-rollout-{x.pk}")
    expect(row).to_have_attribute("data-state", "pending")
    expect(row.locator("[data-testid^=signal-author-]")).to_have_text([GRADER, "prescreen", "bob"])
    grader, bob = page.get_by_test_id(f"signal-{signals['grader'].pk}"), page.get_by_test_id(f"signal-{signals['reviewer'].pk}")
    expect(grader).to_contain_text(GRADER_NOTE)
    expect(bob).to_contain_text(BOB_NOTE)
    expect(bob).not_to_contain_text(GRADER_NOTE)  # bob's flag, bob's evidence

    # An evidence turn opens the group page at that turn.
    bob.get_by_test_id("evidence-link").click()
    expect(page).to_have_url(re.compile(r"/groups/real-long-00@0/\?lane=2&start=7#turn-2-7$"))
    expect(page.locator("#turn-2-7")).to_be_visible()
    page.go_back()

    # One decision, one reason: the row leaves "pending" at once, every signal decided.
    page.get_by_test_id(f"reason-{x.pk}").fill("turn 3 runs git log --all and reads the fix")
    page.get_by_test_id(f"confirm-{x.pk}").click()
    expect(row).to_have_attribute("data-state", "confirmed")
    expect(row).to_contain_text("no longer pending")
    expect(page.get_by_test_id("filter-pending")).to_have_text("pending (2)")
    expect(page.get_by_test_id("filter-confirmed")).to_have_text("confirmed (1)")
    assert set(CheatDecision.objects.filter(rollout=x).values_list("confirmed", flat=True)) == {True}
    assert CheatAudit.objects.filter(decision__rollout=x).count() == 3
    assert reward(x) == 0.0

    # The prescreen rule in bulk: y is its only pending rollout now.
    bulk = page.get_by_test_id("audit-bulk").locator("li", has_text="upstream_history")
    expect(bulk).to_contain_text("1 pending rollout")
    bulk.get_by_test_id("bulk-reason").fill("git log --all printed only the base commit")
    bulk.get_by_test_id("bulk-overturn").click()
    expect(page.get_by_test_id("bulk-done")).to_contain_text("1 rollout overturned (2 signals)")
    expect(page.get_by_test_id(f"audit-rollout-{y.pk}")).to_have_count(0)
    expect(page.get_by_test_id("filter-pending")).to_have_text("pending (1)")
    assert set(CheatDecision.objects.filter(rollout=y).values_list("confirmed", flat=True)) == {False}
    assert page.console_log.errors == [] and dialogs == []
