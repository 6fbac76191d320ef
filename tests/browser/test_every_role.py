"""Every role at home, in real Chromium: tabs per role, styled error pages with a way back,
empty states that say what to do next, live audit counts, the calibration page at 1,024 px
with a readable mapping chart, and the Team page.

People (tests/conftest.py, tests/reviews/conftest.py): alice admin of acme, bob reviewer,
erin auditor, fay adjudicator; carol admin of "other" only. Groups g1@1 (graded, rollout 3
flagged as a cheat) and g2@1 are mixed, g3@1 all pass. Every test fails on any console
error, CSP refusal or JS dialog.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import OperationalError
from django.db.backends import utils as db_utils
from django.test import RequestFactory
from playwright.sync_api import expect

from gagar_web.errors import server_error
from gagar_web.middleware import CONTENT_SECURITY_POLICY, DatabaseUnavailableMiddleware
from grading.models import ApiToken, CheatDecision, Membership, Role
from tests.helpers.browser import log_in, watch_dialogs
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TABS = {
    "alice": ["Runs", "Review queue", "Cheat audit", "Adjudication", "Calibration", "Comparisons", "Search", "Team"],
    "bob": ["Runs", "Review queue", "Calibration", "Comparisons", "Search"],
    "erin": ["Runs", "Review queue", "Cheat audit", "Calibration", "Comparisons", "Search"],
    "fay": ["Runs", "Review queue", "Adjudication", "Calibration", "Comparisons", "Search"],
}


def unexpected(errors: list[str]) -> list[str]:
    """Console errors but Chromium's and htmx's notes that a response came with an error status."""
    expected = (
        r"Failed to load resource: the server responded with a status of (403|404|500|503)|Response Status Error Code 503 from"
    )
    return [e for e in errors if not re.search(expected, e)]


def new_page(browser, width: int = 1400):
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    from tests.helpers.browser import ConsoleLog

    page.console_log = ConsoleLog(page)
    return page


def test_each_role_sees_the_tabs_it_may_open_and_every_tab_opens(live_server, browser, alice, bob, erin, fay, groups):
    for username, tabs in TABS.items():
        page = new_page(browser)
        dialogs = watch_dialogs(page)
        log_in(page, live_server, username, "/projects/acme/")
        nav = page.get_by_test_id("desk-nav")
        expect(nav.locator("a")).to_have_text(tabs)
        for href in [a.get_attribute("href") for a in nav.locator("a").all()]:
            response = page.goto(f"{live_server.url}{href}")
            assert response.status == 200, (username, href, response.status)
            expect(page.get_by_test_id("error-page")).to_have_count(0)
            expect(page.get_by_test_id("desk-nav")).to_be_visible()
        assert page.console_log.errors == [] and dialogs == [], username
        page.context.close()


def test_a_refused_page_is_styled_and_leads_back_to_the_project(live_server, page, bob, groups):
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "bob", "/projects/acme/audit/")
    error = page.get_by_test_id("error-page")
    expect(error).to_have_attribute("data-status", "403")
    expect(error).to_contain_text("Your role (reviewer) in acme does not allow this")
    expect(page.locator("header.topbar")).to_contain_text("bob")  # the app's layout, signed in
    page.get_by_test_id("back-to-project").click()
    expect(page).to_have_url(f"{live_server.url}/projects/acme/")
    expect(page.get_by_role("heading", name="acme")).to_be_visible()

    response = page.goto(f"{live_server.url}/projects/acme/runs/no-such-run/")
    assert response.status == 404
    expect(page.get_by_test_id("error-page")).to_contain_text("There is no page at /projects/acme/runs/no-such-run/")
    page.get_by_test_id("back-home").click()
    expect(page).to_have_url(f"{live_server.url}/projects/")
    response = page.goto(f"{live_server.url}/api/v1/groups/nope/?project=zzz")
    assert response.status == 404 and response.headers["content-type"] == "application/json"  # the API keeps JSON
    assert unexpected(page.console_log.errors) == [] and dialogs == []


def test_the_server_error_page_renders_without_the_request_and_leads_home(live_server, page, bob, django_db_blocker):
    with django_db_blocker.block():  # no database: the 500 page needs none
        response = server_error(RequestFactory().get("/projects/acme/"))
    assert response.status_code == 500
    body = response.content.decode()
    log_in(page, live_server, "bob", "/projects/")
    page.route(
        f"{live_server.url}/broken/",
        lambda route: route.fulfill(
            status=500,
            body=body,
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": CONTENT_SECURITY_POLICY},
        ),
    )
    page.goto(f"{live_server.url}/broken/")
    expect(page.get_by_test_id("error-page")).to_have_attribute("data-status", "500")
    expect(page.get_by_role("heading", name="Something went wrong on our side")).to_be_visible()
    assert page.evaluate("getComputedStyle(document.querySelector('.error-page')).borderRadius") == "8px"  # app.css loaded
    page.get_by_test_id("back-home").click()
    expect(page).to_have_url(f"{live_server.url}/projects/")
    assert unexpected(page.console_log.errors) == []


class DatabaseSwitch:
    """Every query fails as a lost database does (OperationalError) while `down` is true."""

    def __init__(self, monkeypatch):
        self.down = False
        for name in ("execute", "executemany"):
            original = getattr(db_utils.CursorWrapper, name)
            monkeypatch.setattr(db_utils.CursorWrapper, name, self._guard(original))

    def _guard(self, original):
        def guarded(cursor, *args, **kwargs):
            if self.down:
                raise OperationalError("server closed the connection unexpectedly")
            return original(cursor, *args, **kwargs)

        return guarded


def test_a_lost_database_shows_the_503_page_that_retries_a_page_and_resends_a_form(live_server, page, monkeypatch, alice):
    get_user_model().objects.create_user(username="newbie", password="x")
    monkeypatch.setattr(DatabaseUnavailableMiddleware, "RETRY_AFTER_SECONDS", 2)
    database = DatabaseSwitch(monkeypatch)
    log_in(page, live_server, "alice", "/projects/acme/team/")
    expect(page.get_by_role("heading", name="Team")).to_be_visible()

    database.down = True
    response = page.goto(f"{live_server.url}/projects/acme/")
    assert response.status == 503 and response.headers["retry-after"] == "2"
    expect(page.get_by_test_id("error-page")).to_have_attribute("data-status", "503")
    expect(page.locator("meta[http-equiv=refresh]")).to_have_attribute("content", "2")  # Retry-After, honoured
    database.down = False
    page.get_by_test_id("retry").click()
    expect(page.get_by_role("heading", name="acme")).to_be_visible()

    page.goto(f"{live_server.url}/projects/acme/team/")
    page.get_by_test_id("add-username").fill("newbie")
    database.down = True
    page.get_by_test_id("add-member").click()
    expect(page.get_by_test_id("error-page")).to_have_attribute("data-status", "503")
    retry = page.get_by_test_id("retry")
    expect(retry).to_be_disabled()  # until Retry-After has passed
    database.down = False
    page.wait_for_selector("form[data-retry-ready=true]", state="attached")
    retry.click()
    expect(page.locator(".flash")).to_contain_text("newbie is now reviewer in acme")
    assert Membership.objects.get(user__username="newbie").role == Role.REVIEWER
    assert unexpected(page.console_log.errors) == []


def test_a_run_without_mixed_groups_says_there_is_nothing_to_grade_and_what_to_do(live_server, page, acme, alice, bob):
    ingest_groups(
        acme, small_group("a@1", run="quiet", rewards=(1, 1)), small_group("b@1", run="quiet", instance_id="t-2", rewards=(0, 0))
    )
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "bob", "/projects/acme/runs/quiet/")
    hint = page.get_by_test_id("next-steps")
    expect(hint).to_have_attribute("data-state", "nothing-to-grade")
    expect(hint).to_contain_text("Nothing to grade: no group mixes passes and fails")
    expect(page.locator("canvas[data-chart]")).to_have_count(0)  # no empty chart axes
    expect(hint).not_to_contain_text("import_runs")  # bob may not import
    page.goto(f"{live_server.url}/projects/acme/runs/quiet/steps/1/")
    expect(page.get_by_test_id("next-steps")).to_contain_text("All 2 groups of this step either pass or fail")
    expect(page.locator("canvas[data-chart]")).to_have_count(0)
    expect(page.get_by_text("0 / 0 / 2")).to_have_count(0)

    page.goto(f"{live_server.url}/projects/acme/review/")
    expect(page.get_by_test_id("queue-empty")).to_contain_text("No mixed group in acme yet, so nothing to judge")
    page.goto(f"{live_server.url}/projects/acme/calibration/")
    hint = page.get_by_test_id("next-steps")
    expect(hint).to_have_attribute("data-state", "no-judgments")
    hint.get_by_test_id("next-judge").click()
    expect(page.get_by_role("heading", name="Review queue")).to_be_visible()
    assert page.console_log.errors == [] and dialogs == []

    page.context.clear_cookies()
    log_in(page, live_server, "alice", "/projects/acme/runs/quiet/")
    expect(page.get_by_test_id("next-steps")).to_contain_text("import_runs with several run folders of the same tasks")
    page.goto(f"{live_server.url}/projects/acme/audit/")
    expect(page.get_by_test_id("audit-empty")).to_contain_text("No cheat signals in acme yet")


def test_an_ungraded_step_links_to_grading_and_judging(live_server, page, acme, alice):
    ingest_groups(acme, small_group("m@1", run="fresh"), small_group("n@1", run="fresh", instance_id="t-2"))
    log_in(page, live_server, "alice", "/projects/acme/runs/fresh/steps/1/")
    hint = page.get_by_test_id("next-steps")
    expect(hint).to_have_attribute("data-state", "ungraded")
    expect(hint).to_contain_text("2 mixed groups, none graded yet")
    expect(page.locator("canvas[data-chart='lambda-chart']")).to_have_count(0)
    hint.get_by_test_id("next-grade").click()
    expect(page).to_have_url(re.compile(r"/steps/1/grading/$"))


def test_audit_counts_follow_a_decision_without_a_reload(live_server, page, erin, groups):
    decision = CheatDecision.objects.get(rollout__group__uid="g1@1", rollout__index=3, source="grader")
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "erin", "/projects/acme/audit/")
    expect(page.get_by_test_id("filter-pending")).to_have_text("pending (1)")
    expect(page.get_by_test_id("filter-confirmed")).to_have_text("confirmed (0)")
    page.get_by_test_id(f"reason-{decision.rollout_id}").fill("turn 1 reads the upstream fix")
    page.get_by_test_id(f"confirm-{decision.rollout_id}").click()
    expect(page.get_by_test_id(f"audit-rollout-{decision.rollout_id}")).to_have_attribute("data-state", "confirmed")
    expect(page.get_by_test_id(f"audit-rollout-{decision.rollout_id}")).to_contain_text("confirmed as a cheat")
    expect(page.get_by_test_id("filter-pending")).to_have_text("pending (0)")
    expect(page.get_by_test_id("filter-confirmed")).to_have_text("confirmed (1)")
    expect(page.get_by_test_id("filter-pending")).to_have_class("active")  # still the filter erin was on
    assert page.console_log.errors == [] and dialogs == []


def test_calibration_fits_at_1024_px_and_the_mapping_chart_shows_intervals_and_bands(live_server, browser, alice, judged):
    page = new_page(browser, width=1024)
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "alice", "/projects/acme/calibration/?run=r1")
    expect(page.get_by_test_id("agreement")).to_be_visible()
    for testid in ("agreement", "ceiling", "fitted"):
        table = page.get_by_test_id(testid)
        fits = table.evaluate("""t => {
            const card = t.closest('.card'), box = t.getBoundingClientRect(), c = card.getBoundingClientRect();
            const scroller = t.closest('.table-scroll'), s = scroller && scroller.getBoundingClientRect();
            const inside = box.left >= c.left - 0.5 && box.right <= c.right + 0.5;
            const scrolls = !!scroller && s.right <= c.right + 0.5 && getComputedStyle(scroller).overflowX === 'auto';
            return {inside, scrolls};
        }""")
        assert fits["inside"] or fits["scrolls"], (testid, fits)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1024  # the page itself does not scroll sideways
    chart = page.locator("canvas[data-chart='mapping-chart']")
    expect(chart).to_have_attribute("data-intervals-drawn", "3")
    expect(chart).to_have_attribute("data-bands-drawn", "3")
    spec = page.evaluate("JSON.parse(document.getElementById('mapping-chart').textContent)")
    assert spec["type"] == "mapping" and spec["bands"]["data"][0] == [1.0, 1.0] and spec["bands"]["data"][2] == [0.5, 0.5]
    assert all(lo <= f <= hi for f, (lo, hi) in zip(spec["fitted"]["data"], spec["intervals"]["data"]))
    assert page.console_log.errors == [] and dialogs == []
    page.context.close()


def test_admin_manages_the_team_and_its_tokens(live_server, page, alice, bob):
    get_user_model().objects.create_user(username="newbie", password="x")
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "alice", "/projects/acme/")
    page.get_by_test_id("desk-nav").get_by_role("link", name="Team").click()
    expect(page.get_by_role("heading", name="Team")).to_be_visible()

    page.get_by_test_id("add-username").fill("newbie")
    page.get_by_test_id("add-role").select_option("auditor")
    page.get_by_test_id("add-member").click()
    expect(page.locator(".flash")).to_contain_text("newbie is now auditor in acme")
    page.get_by_test_id("role-newbie").select_option("adjudicator")
    page.get_by_test_id("save-role-newbie").click()
    expect(page.locator(".flash")).to_contain_text("newbie is now adjudicator")
    assert Membership.objects.get(user__username="newbie").role == Role.ADJUDICATOR
    page.wait_for_selector('body[data-confirm-ready="true"]', state="attached")
    page.get_by_test_id("remove-newbie").click()  # irreversible: a dialog first, Cancel focused, Esc cancels
    dialog = page.get_by_test_id("confirm-remove-newbie")
    expect(dialog).to_be_visible()
    expect(page.get_by_test_id("confirm-remove-newbie-cancel")).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert Membership.objects.filter(user__username="newbie").exists()
    page.get_by_test_id("remove-newbie").click()
    expect(dialog).to_be_visible()
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_contain_text("newbie was removed from acme")
    expect(page.get_by_test_id("member-newbie")).to_have_count(0)

    page.get_by_test_id("role-alice").select_option("reviewer")  # the last admin
    page.get_by_test_id("save-role-alice").click()
    expect(page.locator(".flash")).to_contain_text("alice is the last admin of acme")
    assert Membership.objects.get(user=alice).role == Role.ADMIN

    page.get_by_test_id("token-username").fill("ingest-bot")
    page.get_by_test_id("token-role").select_option("admin")
    page.get_by_test_id("token-name").fill("nightly import")
    page.get_by_test_id("create-token").click()
    secret = page.get_by_test_id("token-secret").inner_text()
    token = ApiToken.objects.get(user__username="ingest-bot")
    assert ApiToken.digest_of(secret) == token.digest
    expect(page.get_by_test_id(f"token-{token.prefix}")).to_contain_text("never")
    ingest = page.request.post(
        f"{live_server.url}/api/v1/groups/?project=acme",
        data=jsonl(small_group("t-1@1")),
        headers={"Authorization": f"Token {secret}", "Content-Type": "application/x-ndjson"},
    )
    assert ingest.status == 200, ingest.text()
    page.goto(f"{live_server.url}/projects/acme/team/")
    assert secret not in page.content()  # shown once
    row = page.get_by_test_id(f"token-{token.prefix}")
    expect(row).not_to_contain_text("never")  # last use
    page.wait_for_selector('body[data-confirm-ready="true"]', state="attached")
    page.get_by_test_id(f"revoke-{token.prefix}").click()
    page.get_by_test_id(f"confirm-revoke-{token.prefix}-confirm").click()
    expect(page.locator(".flash")).to_contain_text("the API refuses it from now on")
    expect(page.get_by_test_id(f"token-{token.prefix}")).to_contain_text("revoked")
    refused = page.request.post(
        f"{live_server.url}/api/v1/groups/?project=acme",
        data=jsonl(small_group("t-2@1")),
        headers={"Authorization": f"Token {secret}", "Content-Type": "application/x-ndjson"},
    )
    assert refused.status == 401
    assert page.console_log.errors == [] and dialogs == []


def test_an_htmx_decision_refused_with_a_503_keeps_the_form_and_retries(live_server, page, monkeypatch, erin, groups):
    decision = CheatDecision.objects.get(rollout__group__uid="g1@1", rollout__index=3, source="grader")
    monkeypatch.setattr(DatabaseUnavailableMiddleware, "RETRY_AFTER_SECONDS", 1)
    database = DatabaseSwitch(monkeypatch)
    log_in(page, live_server, "erin", "/projects/acme/audit/")
    page.get_by_test_id(f"reason-{decision.rollout_id}").fill("turn 1 reads the upstream fix")
    database.down = True
    page.get_by_test_id(f"confirm-{decision.rollout_id}").click()
    message = page.locator(f"#audit-rollout-{decision.rollout_id} [data-htmx-error='503']")
    expect(message).to_contain_text("The database is unavailable right now; nothing was changed.")
    expect(page.get_by_test_id(f"reason-{decision.rollout_id}")).to_have_value("turn 1 reads the upstream fix")  # kept
    database.down = False
    page.wait_for_selector(f"#audit-rollout-{decision.rollout_id} .htmx-error[data-retry-ready=true]", state="attached")
    message.get_by_test_id("htmx-retry").click()
    expect(page.get_by_test_id(f"audit-rollout-{decision.rollout_id}")).to_have_attribute("data-state", "confirmed")  # sent again
    expect(page.get_by_test_id("filter-confirmed")).to_have_text("confirmed (1)")
    decision.refresh_from_db()
    assert decision.confirmed is True
    assert unexpected(page.console_log.errors) == []
