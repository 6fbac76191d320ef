"""A blind comparison in Chromium, as its users meet it: alice (admin) builds one from the form
over two runs of real trajectories; bob (reviewer) is served its cross-run group from the queue,
judges it blind by lane label, and only then sees which runs it compared and how they fared;
alice reads the figures people gave. Every wait is on a marker the page sets."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grading.models import Comparison, ComparisonEntry, Group
from reviews.models import Judgment
from reviews.services.queue import update_policy
from tests.helpers.browser import log_in, tier_lanes, wait_until_ready
from tests.helpers.comparisons import side_groups
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
A, B = "run-alpha-seven", "run-omega-three"


def test_built_judged_blind_then_figures(live_server, page, acme, alice, bob):
    ingest_groups(acme, *side_groups(A, offset=0, steps=(2,)), *side_groups(B, offset=8, steps=(2,)))
    update_policy(project=acme, overlap=0.0, blind=True, lease_minutes=60)

    log_in(page, live_server, "alice", "/projects/acme/comparisons/")
    form = page.get_by_test_id("comparison-form")
    form.get_by_label("Name").fill("final")
    form.locator("select[name=a_run]").select_option(A)
    form.locator("select[name=b_run]").select_option(B)
    form.get_by_label("Tasks at most").fill("1")
    form.get_by_label("Rollouts per side and task (k)").fill("2")
    with page.expect_navigation():
        form.get_by_role("button", name="Build comparison").click()
    expect(page).to_have_url(re.compile(r"/projects/acme/comparisons/final/$"))
    expect(page.get_by_test_id("comparison-unjudged")).to_be_visible()
    comparison = Comparison.objects.get()
    group = Group.objects.get(run=comparison.run)
    sides = dict(ComparisonEntry.objects.filter(comparison=comparison).values_list("rollout__index", "side"))
    assert set(sides.values()) == {"a", "b"} and len(sides) <= 4
    lanes = "ABCD"[: len(sides)]

    page.context.clear_cookies()
    log_in(page, live_server, "bob", "/projects/acme/comparisons/final/")
    expect(page.get_by_test_id("comparison-withheld")).to_be_visible()
    assert A not in page.content() and B not in page.content()
    page.goto(f"{live_server.url}/projects/acme/review/")
    page.get_by_test_id("next-group").click()
    expect(page).to_have_url(re.compile(rf"/runs/final/groups/{group.uid}/$"))
    wait_until_ready(page)
    names = page.eval_on_selector_all("#lanes > .lane", "els => els.map(e => e.dataset.name)")
    assert names == list(lanes)
    text = page.content()
    assert A not in text and B not in text and f"{A}@2" not in text
    keys = "1" + "2" * (len(sides) - 2) + "3"
    tier_lanes(page, keys)
    expect(page.get_by_test_id("comparison-badge")).to_be_visible()
    with page.expect_navigation():
        page.keyboard.press("s")
    judgment = Judgment.objects.get(reviewer=bob, group=group)
    assert sorted(judgment.items.values_list("tier", flat=True)) == sorted(f"T{k}" for k in keys)

    page.goto(f"{live_server.url}/projects/acme/comparisons/final/")
    figures = page.get_by_test_id("comparison-figures")
    expect(figures).to_be_visible()
    expect(page.get_by_test_id("comparison-sides")).to_contain_text(f"{A}@2")
    tiers = {item.rollout.index: item.tier for item in judgment.items.select_related("rollout")}
    t1_side = sides[next(i for i, t in tiers.items() if t == "T1")]
    expect(figures.locator(f'[data-figure="groups_led"] [data-side="{t1_side}"]')).to_contain_text("100.0 %")
    share = 100 / list(sides.values()).count(t1_side)
    expect(figures.locator(f'[data-figure="t1_share"] [data-side="{t1_side}"]')).to_contain_text(f"{share:.1f} %")
