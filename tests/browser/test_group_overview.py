"""The group page's overview, layouts, patch clusters and search within a rollout,
in real Chromium.

People (tests/conftest.py): alice is acme's admin (she sees grader verdicts), bob reviews
acme. The group c1@1 has eight rollouts: #0, #2 and #3 pass with the same one-line fix (#3
also leaves a debug_issue.py behind), #1 passes with another fix, #4-#7 fail (#5 with the
same fix as #0). #0 has 60 messages, turn 42 runs `echo needle-42` and turn 10's observation
is 120 lines long. A grader, SECRET_GRADER, tiered it; its name and tiers may reach bob only
after he submits. Every test fails on a console error or a CSP refusal.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grading.models import Group
from grading.verdicts.store import GradeInput, record_verdict
from reviews.models import JudgmentItem
from reviews.selectors.lanes import lanes_for
from reviews.services.queue import assign, update_policy
from tests.helpers.browser import log_in
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SECRET_GRADER = "overview-secret-grader@3"
FIX = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 0\n+y = 42\n"
OTHER_FIX = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 0\n+y = 41 + 1\n"
DEBUG = (
    "diff --git a/debug_issue.py b/debug_issue.py\nnew file mode 100644\n--- /dev/null\n+++ b/debug_issue.py\n"
    "@@ -0,0 +1 @@\n+print('debug')\n"
)
PATH = "/projects/acme/runs/r1/groups/c1@1/"


def _messages(n: int) -> list[dict]:
    messages = [{"role": "user", "content": "Fix the widget."}]
    for k in range(1, n):
        observation = "\n".join(f"line {j} of a long listing" for j in range(120)) if k == 10 else f"output {k}"
        messages.append({"role": "assistant", "content": f"step {k}", "action": f"echo needle-{k}", "observation": observation})
    return messages


@pytest.fixture
def clustered(acme, alice):
    line = small_group("c1@1", instance_id="c-1", rewards=(1, 1, 1, 1, 0, 0, 0, 0))
    patches = {0: FIX, 1: OTHER_FIX, 2: FIX, 3: FIX + DEBUG, 5: FIX}
    for rollout in line["rollouts"]:
        if rollout["index"] in patches:
            rollout["patch"] = patches[rollout["index"]]
    line["rollouts"][0]["messages"] = _messages(60)
    ingest_groups(acme, line)
    group = Group.objects.get(uid="c1@1")
    record_verdict(
        group=group,
        grader=SECRET_GRADER,
        status="valid",
        grades=[
            GradeInput(0, "T1", 1, evidence=[{"kind": "patch", "rollout": 0, "locator": "w.py:2", "note": "the fix"}]),
            GradeInput(1, "T2", 2),
            GradeInput(2, "T1", 1),
            GradeInput(3, "T3", 3),
        ],
    )
    return group


def _ready(page) -> None:
    page.wait_for_selector('body[data-group-ready="true"][data-judge-ready="true"]', state="attached")


def _visible_lanes(page) -> list[int]:
    return [int(i) for i in page.locator("article.lane:visible").evaluate_all("ls => ls.map(l => l.dataset.index)")]


def test_overview_shows_every_rollout_and_a_row_click_scrolls_its_lane_into_view(live_server, page, alice, clustered):
    log_in(page, live_server, "alice", PATH)
    _ready(page)
    rows = page.locator("[data-testid=overview-table] tbody tr")
    expect(rows).to_have_count(8)
    # Passing lanes first (by index, as nobody judges blind here), failing after, in the overview and the strip.
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.lane)") == [str(i) for i in range(8)]
    row = page.get_by_test_id("overview-row-3")
    expect(row).to_contain_text("pass")
    expect(row).to_contain_text("same change as #0, #2, #5, +1 extra file")
    expect(row.locator("td").nth(3)).to_have_text("2")  # files: w.py and debug_issue.py
    expect(row.locator("td").nth(5)).to_have_text("1/0")  # all its tests passed/failed
    expect(row.locator("td").nth(6)).to_have_text("1/0")  # FAIL_TO_PASS passed/failed
    expect(page.get_by_test_id("overview-row-4").locator("td").nth(6)).to_have_text("0/1")
    expect(row).to_contain_text("1,003")  # tokens
    expect(row.locator(".badge.tier-T3")).to_have_text("T3")  # alice sees the grader's tier
    expect(page.get_by_test_id("overview-row-0")).to_contain_text("same change as #2, #3, #5")
    expect(page.get_by_test_id("overview-row-1")).to_contain_text("unique change")
    expect(page.get_by_test_id("cluster-3")).to_have_text("same change as #0, #2, #5, +1 extra file")
    expect(page.locator("[data-testid=overview] summary")).to_contain_text("8 rollouts, 5 distinct changes")

    # The last lane is off to the right; its row brings it into view.
    last = page.locator("#rollout-7")
    expect(last).not_to_be_in_viewport()
    page.get_by_test_id("overview-row-7").locator("td").nth(3).click()
    expect(last).to_be_in_viewport()
    assert page.evaluate("location.hash") == "#rollout-7"

    # Sorting by a column reorders the rows, and a second click reverses it.
    page.locator("[data-sort=turns]").click()
    expect(rows.first).to_have_attribute("data-lane", "1")  # 2 messages; #0 has 60
    page.locator("[data-sort=turns]").click()
    expect(rows.first).to_have_attribute("data-lane", "0")

    # The scrollbar above the lanes moves the strip; so does the next-lane button.
    page.evaluate("document.getElementById('lanes').scrollLeft = 0")
    expect(page.locator("#rollout-7")).not_to_be_in_viewport()
    expect(page.get_by_test_id("top-scroller")).to_be_visible()
    page.get_by_test_id("top-scroller").evaluate("s => { s.scrollLeft = s.scrollWidth; }")
    expect(page.locator("#rollout-7")).to_be_in_viewport()
    page.evaluate("document.getElementById('lanes').scrollLeft = 0")
    expect(page.locator("#rollout-0")).to_be_in_viewport()
    page.get_by_test_id("lane-next").click()
    expect(page.locator("#rollout-0")).not_to_be_in_viewport()
    expect(page.locator("#rollout-1")).to_be_in_viewport()

    # An evidence link lands on its patch line with the file's header in view.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.locator("#rollout-0 .evidence a").click()
    target = page.locator("#rollout-0 table.diff tr.landed")
    expect(target).to_have_count(1)
    expect(target).to_be_in_viewport()
    expect(page.locator("#rollout-0 details.file summary").first).to_be_in_viewport()
    assert page.console_log.errors == [], page.console_log.errors


def test_a_cluster_is_tiered_by_keyboard_and_stored_one_item_per_rollout_blind(live_server, page, bob, clustered):
    update_policy(project=clustered.run.project, overlap=1.0, blind=True, lease_minutes=60)
    assign(group=clustered, reviewer=bob)
    log_in(page, live_server, "bob", PATH)
    expect(page.get_by_test_id("blind-badge")).to_be_visible()
    k = lanes_for(user=bob, group=clustered).key  # bob meets rollout i as lane k(i) (A, B, ...)
    _ready(page)

    # Blind: the overview carries no grader field, no grader tier column and no tier badge.
    overview = page.get_by_test_id("overview")
    expect(overview).to_be_visible()
    expect(overview.locator("th")).not_to_contain_text(["grader tier"])
    expect(overview.locator("[data-sort=tier], [data-sort=rank], .badge[class*=tier-]")).to_have_count(0)
    assert SECRET_GRADER not in page.content()
    assert page.locator("[data-testid=overview-table] tbody tr[data-tier]").count() == 0

    # Passing lanes come first (in bob's own shuffle); the failing ones after them.
    order = page.locator("#lanes > article.lane").evaluate_all("ls => ls.map(l => l.dataset.index)")
    assert order == list("ABCDEFGH")
    assert set(order[:4]) == {k(i) for i in (0, 1, 2, 3)} and set(order[4:]) == {k(i) for i in (4, 5, 6, 7)}

    # The lane's button does the same as the keys: #0's tier (3) to #2 and #3, not to #1 (another change).
    page.get_by_test_id(f"overview-row-{k(0)}").locator("td").nth(1).click()
    expect(page.locator(f"#rollout-{k(0)}")).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("3")
    page.get_by_test_id(f"tier-cluster-{k(0)}").click()
    for index in (0, 2, 3):
        expect(page.get_by_test_id(f"tier-{k(index)}-T3")).to_be_checked()
    expect(page.locator(f"#rollout-{k(1)} [data-judge] input[type=radio]:checked")).to_have_count(0)
    expect(page.get_by_test_id(f"tier-cluster-{k(1)}")).to_have_count(0)
    # Go to #2's lane from the overview and give its whole cluster T2 with Shift+2.
    page.get_by_test_id(f"overview-row-{k(2)}").locator("td").nth(1).click()
    expect(page.locator(f"#rollout-{k(2)}")).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("Shift+Digit2")
    for index in (0, 2, 3):
        expect(page.get_by_test_id(f"tier-{k(index)}-T2")).to_be_checked()
    expect(page.get_by_test_id(f"tier-{k(1)}-T2")).not_to_be_checked()
    expect(page.get_by_test_id("cluster-status")).to_contain_text("T2 given to")
    expect(page.locator("[data-role=progress]")).to_have_text("3 of 4 passing rollouts tiered")
    # #1 made another change: a tier of its own.
    page.get_by_test_id(f"overview-row-{k(1)}").locator("td").nth(1).click()
    expect(page.locator(f"#rollout-{k(1)}")).to_have_class(re.compile(r"\bcurrent\b"))
    page.keyboard.press("1")
    expect(page.locator("[data-role=progress]")).to_have_text("4 of 4 passing rollouts tiered")
    assert SECRET_GRADER not in page.content()
    page.keyboard.press("s")

    expect(page.locator(".flash")).to_contain_text("Judgment stored")
    items = {i.rollout.index: i.tier for i in JudgmentItem.objects.filter(judgment__reviewer=bob).select_related("rollout")}
    assert items == {0: "T2", 1: "T1", 2: "T2", 3: "T2"}
    # After the submit the grader's tiers join the overview, and the lanes are indexes again.
    expect(page.get_by_test_id("overview-row-3").locator(".badge.tier-T3")).to_have_text("T3")
    assert page.console_log.errors == [], page.console_log.errors


def test_layouts_compare_two_pinned_lanes_or_one_at_a_time_and_are_remembered(live_server, page, alice, clustered):
    log_in(page, live_server, "alice", PATH)
    _ready(page)
    assert len(_visible_lanes(page)) == 8

    page.get_by_test_id("layout-compare").click()
    expect(page.locator("article.lane:visible")).to_have_count(2)
    assert _visible_lanes(page) == [0, 1]
    first, second = (page.locator(f"#rollout-{i}").bounding_box() for i in (0, 1))
    assert second["x"] >= first["x"] + first["width"] - 1 and abs(second["y"] - first["y"]) < 2, "not side by side"
    assert first["width"] > 600  # the two share the page's width
    page.get_by_test_id("overview-row-5").locator("td").nth(1).click()  # pins #5; the oldest pin (#0) gives way
    expect(page.locator("#rollout-5")).to_be_visible()
    assert _visible_lanes(page) == [1, 5]

    page.reload()
    _ready(page)
    expect(page.get_by_test_id("layout-compare")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("article.lane:visible")).to_have_count(2)

    page.get_by_test_id("layout-one").click()
    expect(page.locator("article.lane:visible")).to_have_count(1)
    assert _visible_lanes(page) == [0]
    page.get_by_test_id("lane-next").click()
    expect(page.locator("#rollout-1")).to_be_visible()
    assert _visible_lanes(page) == [1]
    page.get_by_test_id("overview-row-6").locator("td").nth(1).click()
    expect(page.locator("#rollout-6")).to_be_in_viewport()
    assert _visible_lanes(page) == [6]

    page.get_by_test_id("layout-all").click()
    expect(page.locator("article.lane:visible")).to_have_count(8)
    page.get_by_test_id("collapse-failing").click()
    expect(page.locator("article.lane.collapsed")).to_have_count(4)
    expect(page.locator("#rollout-4 .diff-box")).to_be_hidden()
    assert page.console_log.errors == [], page.console_log.errors


def test_search_and_jump_within_a_rollout_land_on_the_turn(live_server, page, alice, clustered):
    log_in(page, live_server, "alice", PATH)
    _ready(page)
    page.get_by_test_id("turn-search-0").fill("NEEDLE-42")
    page.get_by_test_id("turn-search-0").press("Enter")
    expect(page.get_by_test_id("turn-matches-0")).to_contain_text("1 turn containing")
    match = page.locator("#turn-0-42")
    expect(match).to_be_visible()
    expect(page.locator("#turns-0 li.turn")).to_have_count(1)
    expect(match.locator("mark")).to_have_text("needle-42")
    expect(match).to_contain_text("turn 42")  # the numbering evidence links use

    match.get_by_role("button", name="read on from turn 42").click()
    expect(page.locator("#turn-0-42")).to_be_in_viewport()
    expect(page.locator("#turn-0-43")).to_be_attached()  # the turns from there on, not only the match

    page.get_by_test_id("turn-jump-0").fill("10")
    page.get_by_test_id("turn-jump-0").press("Enter")
    turn = page.locator("#turn-0-10")
    expect(turn).to_be_in_viewport()
    expect(turn).to_have_class(re.compile(r"\blanded\b"))
    # Its 120-line observation is folded; "show all" unfolds it.
    expect(turn.get_by_text("line 119 of a long listing")).to_be_hidden()
    turn.get_by_text(re.compile(r"show all [\d,]+ characters")).click()
    expect(turn.get_by_text("line 119 of a long listing")).to_be_visible()
    assert page.console_log.errors == [], page.console_log.errors
