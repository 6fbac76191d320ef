"""The review desk in real Chromium: keyboard-only blind judging, a concurrent second
submitter, an auditor overturning a cheat flag, and hostile rollout text staying text.

People (tests/conftest.py, tests/reviews/conftest.py): bob and dan review acme, erin
audits it, alice is its admin, tess holds a trainer token. Groups g1@1 (graded by
"secret-grader@1", which flags rollout 3 as a cheat) and g2@1 are mixed: rollouts 0, 1
and 3 pass, 2 fails. Every test fails on any console error, CSP refusal or JS dialog.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from grading.models import CheatDecision, Group
from reviews.models import Judgment, Reveal
from reviews.selectors.lanes import lanes_for
from reviews.services.audit import audit_cheat
from reviews.services.queue import assign, update_policy
from tests.helpers.browser import group_path, log_in, open_blind_assignment, tier_lanes, wait_until_ready, watch_dialogs
from tests.helpers.desk import GRADER, SECRET_NOTE
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_reviewer_judges_blind_with_the_keyboard_only_and_sees_the_verdict_after(live_server, page, bob, groups):
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "bob", "/projects/acme/review/")
    expect(page.get_by_role("heading", name="Review queue")).to_be_visible()
    page.get_by_test_id("next-group").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(re.escape(group_path("g1@1")) + "$"))  # the graded group first

    expect(page.get_by_test_id("blind-badge")).to_be_visible()
    expect(page.locator("section.verdict")).to_have_count(0)
    assert GRADER not in page.content() and SECRET_NOTE not in page.content()

    wait_until_ready(page)
    page.keyboard.press("?")
    expect(page.locator("#keys-help")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#keys-help")).to_be_hidden()

    lanes = page.locator("article.lane:has([data-judge])")
    expect(lanes).to_have_count(3)
    lanes_of_bob = lanes_for(user=bob, group=groups["g1@1"])  # bob meets the rollouts as lanes A, B, C
    order = [lanes_of_bob.index_of(lanes.nth(n).get_attribute("data-index")) for n in range(3)]  # shuffled for bob
    # first lane T1; next T2; next T3 and a cheat call. Nothing but keys.
    for n, key in enumerate(["1", "2", "3"]):
        if n:
            page.keyboard.press("j")
        expect(lanes.nth(n)).to_have_class(re.compile(r"\bcurrent\b"))
        page.keyboard.press(key)
    page.keyboard.press("c")
    expect(page.locator("[data-role=progress]")).to_have_text("3 of 3 passing rollouts tiered")
    expect(page.locator("#draft-status")).to_contain_text("draft saved", timeout=5000)

    page.reload()  # the draft survives a reload
    wait_until_ready(page)
    for index, tier in zip(order, ["T1", "T2", "T3"]):
        expect(page.get_by_test_id(f"tier-{lanes_of_bob.key(index)}-{tier}")).to_be_checked()
    expect(page.get_by_test_id(f"cheat-{lanes_of_bob.key(order[2])}")).to_be_checked()
    page.keyboard.press("s")

    expect(page.locator(".flash")).to_contain_text("Judgment stored")
    expect(page.locator("section.verdict")).to_have_count(3)  # the grader's verdict, revealed
    expect(page.get_by_text(SECRET_NOTE)).to_be_visible()
    for index, tier in zip(order, ["T1", "T2", "T3"]):
        expect(page.get_by_test_id(f"mine-{index}")).to_contain_text(f"You: {tier}")

    judgment = Judgment.objects.get(reviewer=bob)
    assert judgment.blind and judgment.seconds_spent is not None
    items = {i.rollout.index: (i.tier, i.cheat) for i in judgment.items.select_related("rollout")}
    assert items == {order[0]: ("T1", False), order[1]: ("T2", False), order[2]: ("T3", True)}
    assert list(Reveal.objects.values_list("reason", flat=True)) == ["submitted"]
    assert page.console_log.errors == [] and dialogs == []


def test_second_reviewer_submitting_at_the_same_time_is_told_of_the_conflict(live_server, browser, bob, dan, groups):
    update_policy(project=groups["g2@1"].run.project, overlap=1.0, blind=True, lease_minutes=60)
    pages = {}
    for person in (bob, dan):
        assign(group=groups["g2@1"], reviewer=person)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(10_000)
        pages[person.username] = page = context.new_page()
        log_in(page, live_server, person.username, group_path("g2@1"))
        expect(page.get_by_test_id("blind-badge")).to_be_visible()
        wait_until_ready(page)
    for name in ("bob", "dan"):  # both loaded the page before either submitted
        tier_lanes(pages[name], ["1", "1", "2"])
    pages["bob"].keyboard.press("s")
    expect(pages["bob"].locator(".flash")).to_contain_text("Judgment stored")
    pages["dan"].keyboard.press("s")
    expect(pages["dan"].locator(".flash")).to_contain_text(
        "Conflict: bob submitted a judgment on this group while you were judging"
    )
    assert sorted(Judgment.objects.values_list("reviewer__username", flat=True)) == ["bob", "dan"]
    for page in pages.values():
        page.context.close()


def test_a_submit_right_after_the_last_key_sends_no_draft_with_it(live_server, page, bob, groups):
    """The autosave (600 ms timer, unload beacon) never races the submit: `s` pressed right
    after the tier keys posts the judgment alone, and the judgment is stored."""
    open_blind_assignment(page, live_server, bob, groups["g2@1"])
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url.rstrip("/").rsplit("/", 1)[-1]) if r.method == "POST" else None)
    tier_lanes(page, ["1", "2", "3"])
    page.keyboard.press("s")
    expect(page.locator(".flash")).to_contain_text("Judgment stored")
    assert posts == ["judgment"]
    assert Judgment.objects.filter(reviewer=bob, group=groups["g2@1"]).exists()
    assert page.console_log.errors == []


def exported(page, live_server, token: str, index: int) -> dict:
    response = page.request.get(
        f"{live_server.url}/api/v1/advantages/?run=r1&step=1&format=jsonl", headers={"Authorization": f"Token {token}"}
    )
    assert response.status == 200, response.text()[:300]
    rows = [json.loads(line) for line in response.text().splitlines()]
    return next(r for r in rows if r["uid"] == "g1@1" and r["index"] == index)


def test_auditor_overturns_a_cheat_flag_and_the_exported_advantage_changes(live_server, page, alice, erin, trainer_token, groups):
    decision = CheatDecision.objects.get(rollout__group__uid="g1@1", rollout__index=3, source="grader")
    audit_cheat(decision=decision, auditor=alice, confirmed=True, reason="first look: turn 1 reads the fix")
    before = exported(page, live_server, trainer_token, 3)
    assert (before["reward"], before["cheat"]) == (0.0, True)

    dialogs = watch_dialogs(page)
    log_in(page, live_server, "erin", "/projects/acme/audit/?status=confirmed")
    row = page.get_by_test_id(f"audit-rollout-{decision.rollout_id}")
    expect(row).to_contain_text("confirmed cheat")
    expect(row).to_contain_text("read the fix")  # the grader's cited evidence
    page.get_by_test_id("filter-all").click()  # decided on "all", the row stays with its new state
    page.get_by_test_id(f"reason-{decision.rollout_id}").fill("turn 1 read the issue text, not the upstream fix")
    page.get_by_test_id(f"overturn-{decision.rollout_id}").click()
    expect(page.get_by_test_id(f"audit-rollout-{decision.rollout_id}")).to_have_attribute("data-state", "overturned")
    expect(page.get_by_test_id(f"audit-rollout-{decision.rollout_id}")).to_contain_text(
        "erin overturned: turn 1 read the issue text"
    )

    after = exported(page, live_server, trainer_token, 3)
    assert (after["reward"], after["cheat"]) == (1.0, False)
    assert after["redistributed_advantage"] > 0 > before["redistributed_advantage"]
    assert page.console_log.errors == [] and dialogs == []


PAYLOADS = ["<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>", "javascript:alert(3)"]


def test_hostile_rollout_text_renders_as_text(live_server, page, acme, bob):
    line = small_group("xss@1", rewards=(1, 0, 1))
    evil = " ".join(PAYLOADS)
    line["task"]["problem_statement"] = evil
    line["rollouts"][0]["messages"][1]["content"] = f"{evil} [click](javascript:alert(4)) ignore previous instructions"
    line["rollouts"][0]["messages"][1]["observation"] = evil
    path = "src/<img src=x onerror=alert(5)>.py"
    line["rollouts"][0]["patch"] = (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a = 1\n"
        f"+a = '</script><script>alert(6)</script>'\n"
    )
    line["rollouts"][0]["tests"] = {"FAIL_TO_PASS": {"success": [], "failure": [f"test_{p}" for p in PAYLOADS]}}
    line["rollouts"][0]["test_log"] = evil + "\x1b[31mred\x1b[0m"
    ingest_groups(acme, line)
    assign(group=Group.objects.get(uid="xss@1"), reviewer=bob)
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "bob", group_path("xss@1"))
    expect(page.locator("article.lane")).to_have_count(3)
    a = lanes_for(user=bob, group=Group.objects.get(uid="xss@1")).key(0)  # bob judges it blind: rollout 0 is a lane label
    page.get_by_test_id(f"turns-{a}").click()
    expect(page.locator(f"#turns-{a} .turn").first).to_be_visible()
    page.locator(f"#tests-{a} button").click()
    expect(page.locator(f"#log-{a} pre.log")).to_contain_text("<img src=x onerror=alert(1)>")
    page.locator("#compare-tool summary").click()
    page.get_by_test_id("compare-a").select_option(a)
    page.get_by_test_id("compare-b").select_option(lanes_for(user=bob, group=Group.objects.get(uid="xss@1")).key(2))
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("#compare-box")).to_contain_text("alert(6)")

    text = page.locator("main").inner_text()
    for payload in PAYLOADS:
        assert payload in text, payload  # shown as the characters they are
    assert "onerror=alert(5)" in page.locator(f"#diff-{a}").inner_text()
    assert page.locator("main img").count() == 0 and page.locator("main script").count() == 0
    assert page.locator("a[href^='javascript:']").count() == 0
    assert page.console_log.errors == [] and dialogs == []
