"""The grader campaigns page in Chromium: an admin starts a campaign from the form and reads its
counts, starts the same grader again and sees every group skipped as graded before, and
watches a running campaign's row refresh until it ends (the page polls while one runs and
marks the list settled when none does)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from grading.models import Campaign, Verdict
from tests.helpers.browser import log_in
from tests.helpers.campaigns import campaign_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGE = "/projects/acme/calibration/campaigns/"


@pytest.fixture
def mixed(acme):
    return sum(g.is_mixed for g in campaign_groups(acme).values())


def _settled(page):
    page.wait_for_selector('[data-testid="campaigns"][data-settled="true"]', state="attached")


def test_an_admin_starts_a_campaign_and_runs_it_again(live_server, page, alice, mixed):
    log_in(page, live_server, "alice", PAGE)
    _settled(page)
    expect(page.get_by_test_id("no-campaigns")).to_be_visible()

    form = page.get_by_test_id("campaign-form")
    form.get_by_label("Grader").select_option("heuristic")
    form.get_by_label("Run").select_option("r1")
    form.get_by_role("button", name="Start campaign").click()
    _settled(page)  # eager Celery: it ran inside the POST
    expect(page.locator(".flash")).to_contain_text("heuristic@1: 3 mixed groups, 0 graded before")
    first = Campaign.objects.get()
    row = page.locator(f'tr[data-campaign="{first.pk}"]')
    expect(row).to_have_attribute("data-status", "done")
    expect(row).to_contain_text("3 / 3")
    expect(row.get_by_role("button", name="Cancel")).to_have_count(0)
    assert Verdict.objects.filter(grader="heuristic@1").count() == mixed == 3

    form.get_by_label("Grader").select_option("heuristic")
    form.get_by_label("Run").select_option("r1")
    form.get_by_label("Step").fill("1")
    form.get_by_role("button", name="Start campaign").click()
    _settled(page)
    again = Campaign.objects.exclude(pk=first.pk).get()
    row = page.locator(f'tr[data-campaign="{again.pk}"]')
    expect(row).to_contain_text("r1 step 1")
    cells = row.locator("td")
    expect(cells.nth(5)).to_have_text("0")  # graded
    expect(cells.nth(6)).to_have_text("2")  # skipped: graded before
    assert Verdict.objects.count() == 3  # nothing graded twice
    expect(page.locator("tbody tr")).to_have_count(2)
    assert page.console_log.errors == []


def test_a_running_campaign_refreshes_until_it_ends(live_server, page, alice, acme, mixed):
    running = Campaign.objects.create(
        project=acme,
        grader="heuristic@1",
        backend="heuristic",
        scope=Campaign.Scope.RUN,
        run=acme.runs.get(name="r1"),
        status=Campaign.Status.RUNNING,
        total=3,
        graded=1,
    )
    log_in(page, live_server, "alice", PAGE)
    section = page.get_by_test_id("campaigns")
    expect(section).to_have_attribute("data-settled", "false")
    row = page.locator(f'tr[data-campaign="{running.pk}"]')
    expect(row).to_contain_text("1 / 3")
    expect(row.get_by_role("button", name="Cancel")).to_be_visible()

    Campaign.objects.filter(pk=running.pk).update(status=Campaign.Status.DONE, graded=3)
    _settled(page)  # the next poll brought the ended campaign and stopped polling
    expect(row).to_have_attribute("data-status", "done")
    expect(row).to_contain_text("3 / 3")
    expect(row.get_by_role("button", name="Cancel")).to_have_count(0)
    assert page.console_log.errors == []
