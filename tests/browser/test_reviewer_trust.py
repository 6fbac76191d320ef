"""The review desk's trust rules in real Chromium: a reviewer's choice on a group opened outside an assignment
(no grader field in the HTML or any htmx partial before it), the project's rubric guide on
the judge panel, <dialog> confirmations, Submit and next (Shift+S), adjudication drafts and
a judge submit that meets a 503 (a real one: the database refuses the write) keeping the
form and offering a retry.

People and groups: tests/reviews/conftest.py (bob reviews acme, alice is its admin, fay
adjudicates; g1@1 is graded by GRADER with SECRET_NOTE in its evidence; g2@1 is mixed and
ungraded). Every test fails on a console error, a CSP refusal or a JS alert/confirm.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import contextmanager

import pytest
from django.db import connection
from playwright.sync_api import expect

from grading.models import RubricGuide
from reviews.models import AdjudicationDraft, Assignment, Judgment, Reveal
from reviews.selectors.lanes import lanes_for
from reviews.services.queue import assign, update_policy
from tests.helpers.browser import group_path, log_in, open_blind_assignment, tier_lanes, wait_until_ready, watch_dialogs
from tests.helpers.desk import GRADER, SECRET_NOTE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GRADER_FIELDS = (GRADER, SECRET_NOTE, "read the fix", 'class="verdict"', "grader says", "grader agrees")
TIER_BADGE = re.compile(r"badge tier-T\d")


def assert_no_grader_field(html: str, where: str) -> None:
    for text in GRADER_FIELDS:
        assert text not in html, (where, text)
    assert not TIER_BADGE.search(html), where


def partial_urls(page) -> list[str]:
    """Every htmx partial the group page can load (hx-get), as the page names them."""
    return page.eval_on_selector_all("[hx-get]", "els => els.map(e => e.getAttribute('hx-get'))")


def test_browsing_reviewer_judges_blind_after_choosing_so(live_server, page, bob, groups):
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "bob", group_path("g1@1"))  # from a link: not through the queue
    wait_until_ready(page)
    expect(page.get_by_test_id("verdict-hidden")).to_be_visible()
    assert_no_grader_field(page.content(), "group page")
    urls = partial_urls(page)
    assert any("/diff/" in u for u in urls) and any("/turns/" in u for u in urls) and any("/log/" in u for u in urls)
    for url in [*urls, group_path("g1@1") + "compare/?a=0&b=1"]:
        for headers in ({"HX-Request": "true"}, {}):
            response = page.request.get(live_server.url + url, headers=headers)
            assert response.status == (400 if url.endswith("/compare/") else 200), url  # compare without a pair: 400
            assert_no_grader_field(response.text(), url)
    assert not Reveal.objects.exists() and not Assignment.objects.exists()

    page.get_by_test_id("judge-blind").click()
    expect(page.get_by_test_id("blind-badge")).to_be_visible()
    wait_until_ready(page)
    assert_no_grader_field(page.content(), "blind judging")
    tier_lanes(page, ["1", "2", "3"])
    page.keyboard.press("s")
    expect(page.locator(".flash")).to_contain_text("Judgment stored")
    expect(page.locator("section.verdict")).to_have_count(3)
    assignment = Assignment.objects.get(reviewer=bob)
    assert assignment.blind and assignment.status == Assignment.Status.SUBMITTED
    assert Judgment.objects.get(reviewer=bob).blind
    assert list(Reveal.objects.values_list("reason", flat=True)) == ["submitted"]
    assert page.console_log.errors == [] and dialogs == []


def test_browsing_reviewer_shows_the_verdict_after_a_dialog(live_server, page, bob, groups, acme):
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "bob", group_path("g1@1"))
    wait_until_ready(page)
    dialog = page.get_by_test_id("confirm-show")
    page.get_by_test_id("show-verdict").click()
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("confirm-show-cancel")).to_be_focused()  # the safe choice
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert not Reveal.objects.exists()
    assert_no_grader_field(page.content(), "after Esc")

    page.get_by_test_id("show-verdict").click()
    expect(dialog).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator("section.verdict")).to_have_count(3)
    expect(page.get_by_text(SECRET_NOTE)).to_be_visible()
    expect(page.locator(".flash")).to_contain_text("will not be served to you to judge blind")
    reveal = Reveal.objects.get(user=bob)
    assert reveal.reason == Reveal.Reason.BROWSE and reveal.group == groups["g1@1"]
    assert not Assignment.objects.exists()
    assert page.console_log.errors == [] and dialogs == []


def test_an_admins_rubric_guide_is_on_the_judge_panel(live_server, browser, page, bob, alice, groups):
    log_in(page, live_server, "alice", "/projects/acme/guide/")
    page.get_by_test_id("guide-tier-T1").fill("T1 here: a maintainer merges it without a single comment")
    page.get_by_test_id("guide-meaning-minimality").fill("Minimal here: no line the fix does not need")
    page.get_by_test_id("guide-save").click()
    expect(page.locator(".flash")).to_contain_text("Rubric guide saved")
    assert RubricGuide.objects.get().tiers["T1"] == "T1 here: a maintainer merges it without a single comment"

    assign(group=groups["g2@1"], reviewer=bob)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(10_000)
    reviewer = context.new_page()
    log_in(reviewer, live_server, "bob", group_path("g2@1"))
    wait_until_ready(reviewer)
    lane = reviewer.locator("article.lane:has([data-judge])").first
    index = lane.get_attribute("data-index")
    tier = reviewer.get_by_test_id(f"tier-label-{index}-T1")
    expect(tier).to_have_attribute("title", "T1: T1 here: a maintainer merges it without a single comment")
    tier.hover()
    lane.locator("details.rubric summary").click()
    expect(reviewer.get_by_test_id(f"score-label-{index}-minimality")).to_have_attribute(
        "title", re.compile(r"^Minimality of change \(1–5, 5 best\): Minimal here: no line the fix does not need Example: ")
    )
    reviewer.keyboard.press("?")
    help_panel = reviewer.get_by_test_id("help-guide")
    expect(help_panel).to_be_visible()
    expect(help_panel).to_contain_text("T1 here: a maintainer merges it without a single comment")
    expect(help_panel).to_contain_text("Minimal here: no line the fix does not need")
    reviewer.keyboard.press("Escape")
    expect(help_panel).to_be_hidden()
    context.close()


def test_reveal_and_skip_ask_first_in_a_dialog(live_server, page, bob, groups):
    dialogs = watch_dialogs(page)
    assign(group=groups["g1@1"], reviewer=bob)
    assign(group=groups["g2@1"], reviewer=bob)
    log_in(page, live_server, "bob", group_path("g1@1"))
    wait_until_ready(page)
    page.keyboard.press("1")  # typed before revealing: kept
    page.get_by_test_id("reveal-early").click()
    dialog = page.get_by_test_id("confirm-reveal")
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("confirm-reveal-cancel")).to_be_focused()
    page.keyboard.press("2")  # no page key acts while the dialog asks
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert not Assignment.objects.get(group=groups["g1@1"]).revealed_early and not Reveal.objects.exists()
    first = page.locator("article.lane:has([data-judge])").first.get_attribute("data-index")
    expect(page.get_by_test_id(f"tier-{first}-T1")).to_be_checked()

    page.get_by_test_id("reveal-early").click()
    expect(dialog).to_be_visible()
    page.get_by_test_id("confirm-reveal-confirm").click()
    expect(page.locator("section.verdict")).to_have_count(3)
    assignment = Assignment.objects.get(group=groups["g1@1"])
    index = lanes_for(user=assignment.reviewer, group=groups["g1@1"]).index_of(first)  # the draft keeps indexes
    assert assignment.revealed_early and assignment.draft.get(f"tier-{index}") == "T1"
    assert Reveal.objects.get().reason == Reveal.Reason.EARLY

    page.goto(live_server.url + group_path("g2@1"))
    wait_until_ready(page)
    page.get_by_test_id("skip").click()
    expect(page.get_by_test_id("confirm-skip")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("confirm-skip")).to_be_hidden()
    assert Assignment.objects.get(group=groups["g2@1"]).is_open
    page.get_by_test_id("skip").click()
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_contain_text("Skipped g2@1")
    assert Assignment.objects.get(group=groups["g2@1"]).status == Assignment.Status.SKIPPED
    assert page.console_log.errors == [] and dialogs == []


def test_shift_s_stores_the_judgment_and_opens_the_next_group(live_server, page, bob, groups, acme):
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "bob", "/projects/acme/review/")
    page.get_by_test_id("next-group").click()
    expect(page).to_have_url(re.compile(re.escape(group_path("g1@1")) + "$"))
    wait_until_ready(page)
    tier_lanes(page, ["1", "2", "3"])
    page.keyboard.press("Shift+S")
    expect(page).to_have_url(re.compile(re.escape(group_path("g2@1")) + "$"))
    expect(page.locator(".flash")).to_contain_text("Judgment of g1@1 stored. Next: g2@1.")
    expect(page.get_by_test_id("blind-badge")).to_be_visible()
    judgment = Judgment.objects.get(reviewer=bob)
    assert judgment.group == groups["g1@1"] and judgment.items.count() == 3
    assert Assignment.objects.get(reviewer=bob, status=Assignment.Status.OPEN).group == groups["g2@1"]
    assert page.console_log.errors == [] and dialogs == []


def test_an_adjudication_draft_survives_a_reload(live_server, page, fay, judged):
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "fay", group_path("g1@1") + "?mode=adjudicate")
    wait_until_ready(page)
    tier_lanes(page, ["2", "1", "3"])
    page.get_by_test_id("reason").select_option("tie")
    expect(page.locator("#draft-status")).to_contain_text("draft saved", timeout=5000)
    order = [int(x) for x in page.eval_on_selector_all("article.lane:has([data-judge])", "els => els.map(e => e.dataset.index)")]
    page.reload()
    wait_until_ready(page)
    for index, tier in zip(order, ["T2", "T1", "T3"]):
        expect(page.get_by_test_id(f"tier-{index}-{tier}")).to_be_checked()
    expect(page.get_by_test_id("reason")).to_have_value("tie")
    page.get_by_test_id("submit").click()
    expect(page.locator(".flash")).to_contain_text("Adjudication stored")
    assert Judgment.objects.get(kind=Judgment.Kind.ADJUDICATION).reason == "tie"
    assert not AdjudicationDraft.objects.exists()
    assert page.console_log.errors == [] and dialogs == []


@pytest.fixture
def writes_refused():
    """A context manager in which the database refuses the judgment's write, for real:
    another connection holds the lock.

    SQLite (the test database in memory, shared cache): a second connection holds the write
    lock, so the submit's BEGIN IMMEDIATE fails at once ("database table is locked").
    PostgreSQL: a second connection holds an exclusive lock on the group-review table, and
    the server's sessions wait at most 300 ms for a lock: lock_timeout is set on the test
    database before the page opens, as the server keeps its sessions (CONN_MAX_AGE)."""
    database = connection.ops.quote_name(connection.settings_dict["NAME"])
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER DATABASE {database} SET lock_timeout = '300ms'")

    @contextmanager
    def refused():
        if connection.vendor == "sqlite":
            raw = sqlite3.connect(
                str(connection.settings_dict["NAME"]), uri=True, timeout=0, isolation_level=None, check_same_thread=False
            )
            raw.execute("BEGIN IMMEDIATE")
            try:
                yield
            finally:
                raw.execute("ROLLBACK")
                raw.close()
            return
        raw = connection.get_new_connection(connection.get_connection_params())
        raw.autocommit = False
        try:
            raw.execute("LOCK TABLE reviews_groupreview IN ACCESS EXCLUSIVE MODE")
            yield
        finally:
            raw.rollback()
            raw.close()

    yield refused
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER DATABASE {database} RESET lock_timeout")


def test_a_503_on_submit_keeps_the_form_and_offers_a_retry(live_server, writes_refused, page, bob, groups):
    dialogs = watch_dialogs(page)
    open_blind_assignment(page, live_server, bob, groups["g1@1"])
    statuses: list[int] = []
    page.on("response", lambda r: statuses.append(r.status) if r.request.method == "POST" else None)
    tier_lanes(page, ["1", "2", "3"])
    lanes = lanes_for(user=bob, group=groups["g1@1"])  # bob meets the rollouts as lanes A, B, C
    shown = page.eval_on_selector_all("article.lane:has([data-judge])", "els => els.map(e => e.dataset.index)")
    order = [lanes.index_of(x) for x in shown]
    with writes_refused():
        page.keyboard.press("s")
        problem = page.get_by_test_id("submit-problem")
        expect(problem).to_be_visible()
        expect(problem).to_contain_text("The database is unavailable right now; your judgment was not stored")
        expect(page.locator(".htmx-error")).to_have_count(0)  # one message and one retry, the judge form's own
        assert 503 in statuses
        expect(page.get_by_test_id("retry")).to_be_focused()
        for lane, tier in zip(shown, ["T1", "T2", "T3"]):  # the form is as it was
            expect(page.get_by_test_id(f"tier-{lane}-{tier}")).to_be_checked()
        assert not Judgment.objects.exists()
    page.get_by_test_id("retry").click()
    expect(page.locator(".flash")).to_contain_text("Judgment stored")
    items = {i.rollout.index: i.tier for i in Judgment.objects.get(reviewer=bob).items.select_related("rollout")}
    assert items == dict(zip(order, ["T1", "T2", "T3"]))
    # The 503 is logged as a failed resource by the browser; nothing else went wrong.
    assert [e for e in page.console_log.errors if "503" not in e] == [] and dialogs == []
