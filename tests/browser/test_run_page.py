"""The run page's credit to cheats confirmed after export, in Chromium.

erin (auditor) opens run r1 of the late-cheat world (tests/helpers/late_cheats.py: the trainer
took step 1 through the API, then a scanner and erin confirmed three cheats), reads step 1's
figure and follows it to the cheat audit, which lists those three rollouts. Every wait is on a
marker the page sets (the credit chart's data-drawn, an audit row's data-state).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import log_in, watch_dialogs
from tests.helpers.late_cheats import advantages_path, late_cheat_world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_auditor_follows_a_steps_late_cheat_credit_to_the_audit(live_server, page, acme, alice, erin, trainer_token):
    def fetch(step: int, fmt: str) -> dict:  # the trainer, over HTTP
        response = page.request.get(
            f"{live_server.url}{advantages_path(step, fmt)}", headers={"Authorization": f"Token {trainer_token}"}
        )
        assert response.status == 200, response.text()[:300]
        return {"final": response.headers["gagar-step-final"], "inputs_version": response.headers["gagar-inputs-version"]}

    world = late_cheat_world(acme, trainer_token=trainer_token, auditor=erin, fetch=fetch)
    assert (world["early"]["final"], world["trained"]["final"]) == ("false", "true")
    r, scanner = world["rollouts"], world["scanner"]
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "erin", "/projects/acme/runs/r1/")
    expect(page.locator("canvas[data-chart='credit-chart']")).to_have_attribute("data-drawn", "1")

    expect(page.get_by_test_id("late-credit-summary")).to_contain_text(
        "Credit to confirmed cheats after export: 1.32 A* (1.50 A) over 3 rollouts in 1 step"
    )
    cell = page.get_by_test_id("late-credit-1")
    expect(cell).to_contain_text("1.32 A*")
    expect(cell).to_contain_text("1.50 A · 3 rollouts")
    expect(page.get_by_test_id("late-credit-scanners-1")).to_have_text(
        f"a scanner at the time: {scanner['history']}; a scanner at the time: {scanner['skip']}; "
        f"caught later by {scanner['fetch']}"
    )
    expect(page.get_by_test_id("late-credit-2")).to_have_text("–")

    page.get_by_test_id("late-credit-link-1").click()
    expect(page).to_have_url(re.compile(r"/projects/acme/audit/\?status=all&rollouts=[\d,]+$"))
    for name in ("fetch", "skip", "history"):
        expect(page.get_by_test_id(f"audit-rollout-{r[name].pk}")).to_have_attribute("data-state", "confirmed")
    expect(page.locator("[data-testid^=audit-rollout-]")).to_have_count(3)
    expect(page.get_by_test_id("audit-scope-rollouts")).to_contain_text("Only the 3 rollouts a link named")
    assert page.console_log.errors == [] and dialogs == []
