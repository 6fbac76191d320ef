"""The calibration page in Chromium: its charts draw under the CSP and an admin activates
the fitted mapping. alice is acme's admin; bob and dan judged g1@1 and g2@1."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from grading.models import MappingActivation
from tests.browser.test_review_desk import log_in, watch_dialogs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_reads_the_charts_and_activates_the_fitted_mapping(live_server, page, alice, judged):
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "alice", "/projects/acme/calibration/?run=r1")
    expect(page.get_by_role("heading", name="Agreement and calibration")).to_be_visible()
    for chart in ("heatmap", "trend-chart", "mapping-chart", "lambda-chart"):
        expect(page.locator(f"canvas[data-chart='{chart}']")).to_have_attribute("data-drawn", "1")
    expect(page.get_by_test_id("agreement")).to_contain_text("secret-grader@1")
    page.get_by_test_id("activate-reason").fill("first calibration: 2 groups, 6 pairs")
    page.get_by_test_id("activate").click()
    expect(page.locator(".flash")).to_contain_text("acme-calibrated@1 is now active for r1")
    assert MappingActivation.objects.get().reason == "first calibration: 2 groups, 6 pairs"
    assert page.console_log.errors == [] and dialogs == []
