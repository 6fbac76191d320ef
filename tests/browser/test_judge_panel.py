"""The judge panel on real groups in real Chromium.

The group g1@1 (tests.helpers.real_groups.scratch_files_group) is real: six long mini-swe-agent
trajectories, rollouts 0-2 from `results_claude_10/…` and 3-5 from `results_gpt5_snowflake/…`
(model, agent config, checkpoint and cost in their fields); 0, 1, 2, 4 and 5 pass, 3 fails.
Rollouts 0, 2 and 4 make the same change, 4 with FIX_SUMMARY.md (1,600 lines), debug_issue.py
and reproduce_issue.py in front of the fix; rollout 1 has no test outcomes recorded. A grader
tiered it (and flags rollout 2 as a cheat); its verdict reaches bob only after he submits.

People (tests/conftest.py, tests/reviews/conftest.py): bob and dan review acme (blind), fay
adjudicates, alice is its admin. Every test fails on a console error or a CSP refusal.
"""

from __future__ import annotations

import re

import pytest
from django.db.models import Sum
from playwright.sync_api import expect

from grading.models import Group
from grading.verdicts.store import GradeInput, record_verdict
from reviews.models import Assignment, Judgment, JudgmentItem
from reviews.selectors.lanes import lanes_for
from reviews.services.judgments import ItemInput, submit_judgment
from reviews.services.queue import update_policy
from tests.helpers.browser import group_path, log_in, open_blind_assignment, wait_until_ready
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import producer_values, scratch_files_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GRADER = "panel-secret-grader@1"
PASSING = (0, 1, 2, 4, 5)


@pytest.fixture
def real(acme, alice):
    line = scratch_files_group()
    ingest_groups(acme, line)
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    group = Group.objects.get(uid="g1@1")
    record_verdict(
        group=group,
        grader=GRADER,
        status="valid",
        grades=[
            GradeInput(0, "T1", 1),
            GradeInput(1, "T2", 2),
            GradeInput(2, "T1", 1, cheat=True),
            GradeInput(4, "T2", 2),
            GradeInput(5, "T3", 3),
        ],
    )
    return {"group": group, "forbidden": [*producer_values(line), GRADER]}


def _open_blind(page, live_server, user, group):
    open_blind_assignment(page, live_server, user, group)
    page.wait_for_selector('body[data-group-ready="true"]', state="attached")
    return lanes_for(user=user, group=group).key  # index -> the lane label bob's page shows


def _saved(page) -> None:
    """The autosave after the last change has been answered (judge.js sets data-saved)."""
    page.wait_for_selector("#draft-status[data-saved='1']:not([data-pending])", state="attached")


def _assert_blind(page, forbidden):
    html = page.content()
    for value in forbidden:
        assert value not in html, value


def test_ranks_are_optional_a_key_clears_and_refusals_name_the_lane(live_server, page, bob, real):
    group = real["group"]
    lane = _open_blind(page, live_server, bob, group)
    labels = [lane(i) for i in PASSING]
    names = page.eval_on_selector_all("#lanes > .lane.pass", "els => els.map(e => e.dataset.name)")
    assert names == sorted(labels) == list("ABCDE")
    _assert_blind(page, real["forbidden"])

    # Lane A current; T1 and `[` (rank 1) on A, T2 on B, then B's tier cleared with `x`.
    expect(page.get_by_test_id("current-lane")).to_have_text("current: A")
    page.keyboard.press("1")
    page.keyboard.press("[")
    expect(page.get_by_test_id("rank-A")).to_have_value("1")
    page.keyboard.press("j")
    page.keyboard.press("2")
    page.keyboard.press("]")
    expect(page.get_by_test_id("rank-B")).to_have_value("1")
    page.keyboard.press("0")  # B's rank only
    expect(page.get_by_test_id("rank-B")).to_have_value("")
    expect(page.get_by_test_id("tier-B-T2")).to_be_checked()
    page.keyboard.press("x")  # B's tier and rank
    expect(page.get_by_test_id("tier-B-T2")).not_to_be_checked()
    expect(page.get_by_test_id("progress")).to_have_text("1 of 5 passing rollouts tiered")

    # Submitting with B, C, D, E untiered: refused in words naming each lane, no field name.
    with page.expect_navigation():
        page.get_by_test_id("submit").click()
    wait_until_ready(page)
    message = page.locator("ul.flash li").filter(has_text="The judgment was not stored")
    expect(message.first).to_contain_text("rollout B passed and needs a tier")
    expect(message.first).to_contain_text("rollout E passed and needs a tier")
    assert not re.search(r"\b(tier|rank)-[A-E0-9]\b", message.first.inner_text())
    assert not Judgment.objects.exists()
    # What was typed came back as the draft: A is T1, rank 1.
    expect(page.get_by_test_id("tier-A-T1")).to_be_checked()
    expect(page.get_by_test_id("rank-A")).to_have_value("1")

    # Tier the rest, ranks left blank except A's: stored, blanks derived from tiers.
    page.locator("#rollout-B .lane-head dl").click()
    for key in "1233":  # B T1, C T2, D T3, E T3
        page.keyboard.press(key)
        page.keyboard.press("j")
    expect(page.get_by_test_id("progress")).to_have_text("5 of 5 passing rollouts tiered")
    with page.expect_navigation():
        page.keyboard.press("s")
    expect(page.get_by_text("Judgment stored.")).to_be_visible()
    by_label = {lane(i): i for i in PASSING}
    stored = {item.rollout.index: (item.tier, item.rank) for item in JudgmentItem.objects.select_related("rollout")}
    assert stored == {
        by_label["A"]: ("T1", 1),
        by_label["B"]: ("T1", 2),
        by_label["C"]: ("T2", 3),
        by_label["D"]: ("T3", 4),
        by_label["E"]: ("T3", 4),
    }
    assert page.console_log.errors == []


def test_own_tiers_in_the_overview_and_a_current_lane_only_the_reviewer_moves(live_server, page, bob, real):
    group = real["group"]
    _open_blind(page, live_server, bob, group)
    header = page.locator("[data-testid=overview-table] thead")
    expect(header).to_contain_text("your tier")
    expect(header).not_to_contain_text("grader tier")  # the grader's stays hidden while judging blind
    current = page.get_by_test_id("current-lane")
    expect(current).to_have_text("current: A")
    expect(current).to_be_in_viewport()

    # A tier clicked in lane D: D's row says so at once; the current lane stays A.
    page.get_by_test_id("tier-label-D-T2").click()
    expect(page.get_by_test_id("my-tier-D")).to_have_text("T2")
    expect(page.get_by_test_id("my-rank-D")).to_have_text("from tier")
    page.get_by_test_id("rank-D").fill("3")
    expect(page.get_by_test_id("my-rank-D")).to_have_text("3")
    page.get_by_test_id("cheat-C").check()
    expect(current).to_have_text("current: A")
    page.keyboard.press("1")  # the keys still act on A
    expect(page.get_by_test_id("tier-A-T1")).to_be_checked()
    expect(page.get_by_test_id("my-tier-A")).to_have_text("T1")
    expect(page.get_by_test_id("tier-D-T1")).not_to_be_checked()
    expect(page.get_by_test_id("progress")).to_have_text("2 of 5 passing rollouts tiered")

    # The reviewer moves it: j, then a click on lane E (not on a control), then an overview row.
    page.keyboard.press("j")
    expect(current).to_have_text("current: B")
    page.locator("#rollout-E .lane-head dl").click()
    expect(current).to_have_text("current: E")
    page.get_by_test_id("overview-row-C").locator("td").nth(1).click()
    expect(current).to_have_text("current: C")
    # Scrolled down the lanes, the bar (sticky) still says which is current.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight / 2)")
    expect(current).to_be_in_viewport()

    # A clear from D's own panel clears D, leaves the current lane alone; the footer follows.
    page.get_by_test_id("clear-D").click()
    expect(page.get_by_test_id("my-tier-D")).to_have_text("–")
    expect(page.get_by_test_id("rank-D")).to_have_value("")
    expect(current).to_have_text("current: C")
    expect(page.get_by_test_id("progress")).to_have_text("1 of 5 passing rollouts tiered")

    # After a reload the draft (the database's) gives the same row and footer.
    _saved(page)
    draft = Assignment.objects.get(reviewer=bob).draft
    assert sum(1 for key in draft if key.startswith("tier-")) == 1
    page.reload()
    wait_until_ready(page)
    expect(page.get_by_test_id("my-tier-A")).to_have_text("T1")
    expect(page.get_by_test_id("my-tier-D")).to_have_text("–")
    expect(page.get_by_test_id("progress")).to_have_text("1 of 5 passing rollouts tiered")
    _assert_blind(page, real["forbidden"])
    assert page.console_log.errors == []


def test_scratch_files_are_collapsed_after_the_fix_and_clusters_read_alike(live_server, page, bob, real):
    group = real["group"]
    lane = _open_blind(page, live_server, bob, group)
    scratchy = lane(4)
    # Its 1,600-line summary makes the patch large: it loads when asked (the partial orders it too).
    page.get_by_test_id(f"load-diff-{scratchy}").click()
    files = page.locator(f"#diff-{scratchy} > details.file > summary code")
    expect(files).to_have_count(1)
    expect(files.first).to_have_text("django/core/management/base.py")  # the fix first, open
    extra = page.get_by_test_id(f"extra-files-{scratchy}")
    expect(extra.locator("> summary")).to_contain_text("+3 extra files")
    assert extra.get_attribute("open") is None
    expect(extra.locator("table.diff").first).to_be_hidden()  # 1,600 lines of summary stay folded
    extra.locator("> summary").click()
    expect(extra.locator("details.file > summary code")).to_have_text(["FIX_SUMMARY.md", "debug_issue.py", "reproduce_issue.py"])

    # One wording per cluster: each of its three lanes names the other two, by label.
    members = sorted(lane(i) for i in (0, 2, 4))
    for label in members:
        others = ", ".join(m for m in members if m != label)
        expected = f"same change as {others}" + (", +3 extra files" if label == scratchy else "")
        expect(page.get_by_test_id(f"cluster-{label}")).to_have_text(expected)
        expect(page.get_by_test_id(f"overview-row-{label}")).to_contain_text(expected)
    # "–" where no test was recorded; counts where they were.
    expect(page.get_by_test_id(f"tests-{lane(1)}")).to_have_text("–")
    expect(page.get_by_test_id(f"tests-{lane(0)}")).to_have_text(re.compile(r"^\d+/\d+$"))
    _assert_blind(page, real["forbidden"])
    assert page.console_log.errors == []


def test_numbers_on_the_overview_footer_and_step_page_agree_with_the_database(live_server, page, bob, real):
    group = real["group"]
    _open_blind(page, live_server, bob, group)
    group.refresh_from_db()
    clusters = set(group.rollouts.values_list("cluster", flat=True))
    passing_clusters = set(group.rollouts.filter(passed=True).values_list("cluster", flat=True))
    assert group.distinct_solutions == len(passing_clusters) == 3
    expect(page.locator("[data-testid=overview] summary")).to_contain_text(
        f"6 rollouts, {len(clusters)} distinct changes ({group.distinct_solutions} among the passing)"
    )
    expect(page.get_by_test_id("progress")).to_have_text(f"0 of {group.n_passed} passing rollouts tiered")

    # Two tiers set; then only the failing lane shown: the footer still counts them, and a
    # draft saved from there (a group note) keeps them in the database.
    page.keyboard.press("1")
    page.keyboard.press("j")
    page.keyboard.press("2")
    _saved(page)
    page.get_by_role("link", name="failing").click()
    wait_until_ready(page)
    expect(page.locator("#lanes > .lane")).to_have_count(1)
    expect(page.get_by_test_id("progress")).to_have_text(f"2 of {group.n_passed} passing rollouts tiered")
    page.get_by_test_id("group-note").fill("looked at the failing one")
    _saved(page)
    draft = Assignment.objects.get(reviewer=bob).draft
    assert draft["note"] == "looked at the failing one"
    assert sorted(v for k, v in draft.items() if k.startswith("tier-")) == ["T1", "T2"]

    page.goto(f"{live_server.url}/projects/acme/runs/r1/steps/1/")
    steps = Group.objects.filter(step__number=1, run__name="r1")
    passed = steps.aggregate(n=Sum("n_passed"))["n"]
    distinct = steps.aggregate(n=Sum("distinct_solutions"))["n"]
    expect(page.locator("p.muted").first).to_contain_text(f"{passed} passed")
    expect(page.get_by_test_id("distinct-solutions")).to_contain_text(f"{distinct} distinct solutions among them")
    assert page.console_log.errors == []


def test_after_submit_grader_agrees_only_with_the_same_cheat_call(live_server, page, bob, real):
    group = real["group"]
    lane = _open_blind(page, live_server, bob, group)
    tiers = {0: "1", 1: "2", 2: "1", 4: "2", 5: "3"}  # the grader's tiers; it flags 2 as a cheat, bob does not
    for label in sorted(lane(i) for i in PASSING):
        index = next(i for i in PASSING if lane(i) == label)
        page.get_by_test_id(f"tier-label-{label}-T{tiers[index]}").click()
    page.get_by_test_id(f"cheat-{lane(5)}").check()  # bob flags 5; the grader does not
    with page.expect_navigation():
        page.get_by_test_id("submit").click()
    expect(page.get_by_text("Judgment stored.")).to_be_visible()
    expect(page.get_by_test_id("grader-agrees-0")).to_be_visible()
    expect(page.get_by_test_id("grader-says-2")).to_have_text("grader says cheat")
    expect(page.get_by_test_id("grader-says-5")).to_have_text("grader says no cheat")
    expect(page.get_by_test_id("grader-agrees-2")).to_have_count(0)
    # Now the grader's tiers sit beside bob's own in the overview.
    expect(page.locator("[data-testid=overview-table] thead")).to_contain_text("grader tier")
    expect(page.get_by_test_id("my-tier-5")).to_have_text("T3")
    assert page.console_log.errors == []


def test_adjudication_starts_from_a_chosen_ranking(live_server, page, bob, dan, fay, real):
    group = real["group"]
    submit_judgment(
        reviewer=bob,
        group=group,
        items=[ItemInput(0, "T1"), ItemInput(1, "T2"), ItemInput(2, "T1"), ItemInput(4, "T2"), ItemInput(5, "T3", cheat=True)],
    )
    submit_judgment(
        reviewer=dan,
        group=group,
        items=[ItemInput(0, "T3"), ItemInput(1, "T1"), ItemInput(2, "T3"), ItemInput(4, "T3"), ItemInput(5, "T2")],
    )
    log_in(page, live_server, "fay", group_path("g1@1") + "?mode=adjudicate")
    wait_until_ready(page)
    expect(page.get_by_test_id("tier-0-T1")).not_to_be_checked()  # blank until she chooses
    expect(page.get_by_test_id("start-from")).to_contain_text("bob's ranking")
    page.get_by_test_id("start-from-reviewer-2").click()  # dan's
    expect(page.get_by_test_id("tier-0-T3")).to_be_checked()
    expect(page.get_by_test_id("tier-1-T1")).to_be_checked()
    page.get_by_test_id("start-from-grader").click()
    expect(page.get_by_test_id("tier-0-T1")).to_be_checked()
    expect(page.get_by_test_id("cheat-2")).to_be_checked()
    expect(page.get_by_test_id("rank-5")).to_have_value("3")
    page.get_by_test_id("start-from-reviewer-1").click()  # bob's, then one change
    expect(page.get_by_test_id("cheat-5")).to_be_checked()
    expect(page.get_by_test_id("cheat-2")).not_to_be_checked()
    expect(page.get_by_test_id("my-tier-4")).to_have_text("T2")
    page.get_by_test_id("tier-label-4-T1").click()
    page.get_by_test_id("reason").select_option(index=1)
    with page.expect_navigation():
        page.get_by_test_id("submit").click()
    final = Judgment.objects.get(kind=Judgment.Kind.ADJUDICATION)
    stored = {i.rollout.index: (i.tier, i.cheat) for i in final.items.select_related("rollout")}
    assert stored == {0: ("T1", False), 1: ("T2", False), 2: ("T1", False), 4: ("T1", False), 5: ("T3", True)}
    assert page.console_log.errors == []


def test_queue_says_n_of_n_and_links_the_previous_group(live_server, page, acme, bob, real):
    ingest_groups(acme, scratch_files_group("g2@1"))
    log_in(page, live_server, "bob", "/projects/acme/review/")
    page.get_by_test_id("next-group").click()
    wait_until_ready(page)
    first = page.url.rstrip("/").split("/groups/")[1]
    expect(page.get_by_test_id("queue-place")).to_have_text("group 1 of 2")
    expect(page.get_by_test_id("previous-group")).to_have_count(0)
    for n, label in enumerate("ABCDE"):
        page.get_by_test_id(f"tier-label-{label}-T{1 + n % 3}").click()
    with page.expect_navigation():
        page.keyboard.press("Shift+S")  # submit and next
    wait_until_ready(page)
    second = page.url.rstrip("/").split("/groups/")[1]
    assert second != first
    expect(page.get_by_test_id("queue-place")).to_have_text("group 2 of 2")
    previous = page.get_by_test_id("previous-group")
    expect(previous).to_contain_text(f"previous group ({first}, submitted)")
    previous.click()
    expect(page).to_have_url(re.compile(re.escape(group_path(first)) + "$"))
    expect(page.locator("[data-testid=review-bar]")).to_contain_text("judged")
    assert page.console_log.errors == []
