"""The calibration page in Chromium: its charts draw under the CSP, a fit below the project's
minimum evidence says so, and an admin activates it only through the confirmation dialog,
which says what it rests on and what it changes. alice is acme's admin; bob and dan judged
g1@1 and g2@1 (2 groups: below the default minimum of 30)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from grading.models import FactorMapping, MappingActivation
from tests.helpers.browser import log_in, watch_dialogs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_calibration(page, live_server):
    log_in(page, live_server, "alice", "/projects/acme/calibration/?run=r1")
    expect(page.get_by_role("heading", name="Agreement and calibration")).to_be_visible()
    page.wait_for_selector('body[data-confirm-ready="true"]', state="attached")


def test_a_thin_fit_says_too_little_evidence_and_activates_only_once_the_dialog_is_confirmed(live_server, page, alice, judged):
    dialogs = watch_dialogs(page)
    open_calibration(page, live_server)
    for chart in ("heatmap", "trend-chart", "mapping-chart", "lambda-chart"):
        expect(page.locator(f"canvas[data-chart='{chart}']")).to_have_attribute("data-drawn", "1")
    expect(page.get_by_test_id("agreement")).to_contain_text("secret-grader@1")
    evidence = page.get_by_test_id("evidence")
    expect(evidence).to_have_attribute("data-state", "too-little")
    expect(evidence).to_contain_text("Too little evidence")
    expect(evidence).to_contain_text("2 judged mixed groups, 30 needed")

    page.get_by_test_id("activate-reason").fill("first calibration: 2 groups, 6 pairs")
    page.get_by_test_id("activate").click()
    dialog = page.get_by_test_id("confirm-activate")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("heading")).to_have_text("Too little evidence: activate the fitted mapping for r1 anyway?")
    expect(page.get_by_test_id("confirm-activate-evidence")).to_contain_text("It rests on 2 judged mixed groups")
    impact = page.get_by_test_id("confirm-activate-impact")
    expect(impact).to_contain_text("changes 6 of 10 rows of the active mapping default@1 (2 groups)")
    expect(impact).to_contain_text("Σ|ΔA*| = ")
    assert not MappingActivation.objects.exists()  # nothing applied while the dialog is open

    page.get_by_test_id("confirm-activate-confirm").click()
    expect(page.locator(".flash")).to_contain_text("acme-calibrated@1 is now active for r1 below the project's minimum evidence")
    activation = MappingActivation.objects.get()
    assert (activation.reason, activation.overrode_minimum, activation.mapping.fit["n_groups"]) == (
        "first calibration: 2 groups, 6 pairs",
        True,
        2,
    )
    assert page.console_log.errors == [] and dialogs == []


def test_cancelling_or_escaping_the_dialog_applies_nothing(live_server, page, alice, judged):
    open_calibration(page, live_server)
    page.get_by_test_id("activate-reason").fill("not sure yet")
    page.get_by_test_id("activate").click()
    expect(page.get_by_test_id("confirm-activate")).to_be_visible()
    expect(page.get_by_test_id("confirm-activate-cancel")).to_be_focused()  # the safe choice first
    page.get_by_test_id("confirm-activate-cancel").click()
    expect(page.get_by_test_id("confirm-activate")).to_be_hidden()
    page.get_by_test_id("activate").click()
    expect(page.get_by_test_id("confirm-activate")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_test_id("confirm-activate")).to_be_hidden()
    assert not MappingActivation.objects.exists() and not FactorMapping.objects.filter(source="calibrated").exists()
    assert page.console_log.errors == []


def test_once_the_admin_lowers_the_minimum_the_same_fit_is_enough(live_server, page, alice, judged):
    open_calibration(page, live_server)
    page.get_by_test_id("minimum-groups").fill("2")
    page.get_by_test_id("minimum-tier-pairs").fill("1")
    page.get_by_role("button", name="Save minimum").click()
    expect(page.locator(".flash")).to_contain_text("Minimum evidence for acme: 2 judged mixed groups")
    expect(page.get_by_test_id("evidence")).to_have_attribute("data-state", "enough")
    page.wait_for_selector('body[data-confirm-ready="true"]', state="attached")
    page.get_by_test_id("activate-reason").fill("enough for acme")
    page.get_by_test_id("activate").click()
    expect(page.get_by_test_id("confirm-activate").get_by_role("heading")).to_have_text("Activate the fitted mapping for r1?")
    page.keyboard.press("Enter")
    expect(page.locator(".flash")).to_contain_text("acme-calibrated@1 is now active for r1; every step")
    assert MappingActivation.objects.get().overrode_minimum is False
    assert page.console_log.errors == []
