"""Blind to the producer in real Chromium: a reviewer judging a multi-model group
blind meets its rollouts as lanes A-F, in their own order, and no page, partial, hit bar or
API answer the page can reach holds a source, cost or producer metadata value.

The group (tests.helpers.real_groups.multi_model_group) is real: six long mini-swe-agent trajectories,
rollouts 0-2 from `results_claude_10/…` and 3-5 from `results_gpt5_snowflake/…`, with
model, agent config, checkpoint and cost in their fields. bob (reviewer) judges it blind.
Every test fails on a console error or CSP refusal.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grading.models import Group
from reviews.models import Assignment, Judgment
from reviews.services.queue import update_policy
from tests.helpers.browser import group_path, log_in, tier_lanes, wait_until_ready
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import multi_model_group, producer_values

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def multi(acme, bob):
    line = multi_model_group()
    ingest_groups(acme, line)
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    return {"group": Group.objects.get(uid="g1@1"), "forbidden": producer_values(line)}


def assert_blind(text: str, forbidden: list[str], where: str) -> None:
    for value in forbidden:
        assert value not in text, (where, value)


def test_a_blind_judge_meets_lanes_a_to_f_and_no_producer_anywhere(live_server, page, bob, multi):
    forbidden = multi["forbidden"]
    log_in(page, live_server, "bob", "/projects/acme/review/")
    page.get_by_test_id("next-group").click()
    expect(page).to_have_url(re.compile(re.escape(group_path("g1@1")) + "$"))
    wait_until_ready(page)
    page.wait_for_selector('body[data-group-ready="true"]', state="attached")
    lanes = page.eval_on_selector_all("#lanes > .lane", "els => els.map(e => [e.id, e.dataset.name, e.className])")
    assert [name for _, name, _ in lanes] == list("ABCDEF")
    assert [lane_id for lane_id, _, _ in lanes] == [f"rollout-{x}" for x in "ABCDEF"]
    assert ["pass" in cls for _, _, cls in lanes] == [True] * 5 + [False]
    rows = page.eval_on_selector_all("[data-testid^=overview-row-]", "els => els.map(e => e.dataset.lane)")
    assert rows == list("ABCDEF")
    assert_blind(page.content(), forbidden, "group page")

    # Every partial the page can load, as the page names it, as htmx and as a page.
    urls = page.eval_on_selector_all("[hx-get]", "els => els.map(e => e.getAttribute('hx-get'))")
    assert urls and all(not re.search(r"/rollouts/\d", u) for u in urls)
    for url in urls:
        for headers in ({"HX-Request": "true"}, {}):
            response = page.request.get(live_server.url + url, headers=headers)
            assert response.status in (200, 400), url  # compare without its pair is a 400
            assert_blind(response.text(), forbidden, url)
    api = page.request.get(live_server.url + "/api/v1/groups/g1@1/?project=acme&run=r1")
    assert api.status == 200 and [r["lane"] for r in api.json()["rollouts"]] == list("ABCDEF")
    assert_blind(api.text(), forbidden, "group API")

    # A lane's turns open under its label; the lane bar names lanes by label too.
    page.get_by_test_id("turns-C").click()
    expect(page.locator("#turn-C-0")).to_be_attached()
    page.get_by_test_id("layout-one").click()
    expect(page.locator("[data-role=lane-where]")).to_contain_text("(A)")
    assert_blind(page.content(), forbidden, "after opening turns")

    # Judged (five passing lanes, the keyboard from lane A); stored by index, then shown by index.
    page.get_by_test_id("layout-all").click()
    page.locator("#rollout-A h2").click()
    tier_lanes(page, "12233")
    with page.expect_navigation():
        page.keyboard.press("s")
    expect(page.get_by_text("Judgment stored.")).to_be_visible()
    judgment = Judgment.objects.get(reviewer=bob)
    assert sorted(judgment.items.values_list("rollout__index", flat=True)) == [0, 1, 2, 4, 5]
    assert not Assignment.objects.get(reviewer=bob).is_open
    expect(page.locator("#rollout-0")).to_be_attached()
    assert "results_claude_10/" in page.content()
    assert page.console_log.errors == []


def test_the_hit_bar_of_a_search_walks_a_lane_by_its_label(live_server, page, bob, multi):
    forbidden = multi["forbidden"]
    log_in(page, live_server, "bob", "/projects/acme/review/")
    page.get_by_test_id("next-group").click()
    wait_until_ready(page)
    page.goto(f"{live_server.url}/projects/acme/search/?q=django&mode=words")
    results = page.locator('[data-testid^="result-g1@1-"]')
    expect(results.first).to_be_visible()
    names = results.evaluate_all("els => els.map(e => e.dataset.testid.split('-').pop())")
    assert names and all(n in "ABCDEF" and n for n in names)
    assert "rollout #" not in page.content()
    assert_blind(page.content(), forbidden, "search page")
    page.get_by_test_id("walk-hits").first.click()
    bar = page.get_by_test_id("hit-bar")
    expect(bar).to_be_visible()
    assert bar.get_attribute("data-lane") in list("ABCDEF")
    page.wait_for_selector("[data-hits-ready]", state="attached")
    assert re.search(r"[?&]lane=[A-F]\b", page.url)
    assert_blind(page.content(), forbidden, "hit bar")
    assert page.console_log.errors == []
