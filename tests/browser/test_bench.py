"""The grader bench in Chromium: an admin picks two graders and a jury of them on r1 and sees
each against people with intervals, the paired differences, grader against grader, cost per
group and the jury's n_eff; the calibration page links to it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from sklearn.metrics import cohen_kappa_score

from grading.models import Role
from tests.helpers.bench import flat, make_bench
from tests.helpers.browser import log_in
from tests.helpers.people import member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_bench_compares_two_graders_and_a_jury(live_server, page, acme, alice):
    make_bench(acme, member("bob", acme, Role.REVIEWER))
    log_in(page, live_server, "alice", "/projects/acme/calibration/?run=r1")
    page.get_by_test_id("bench-link").click()
    page.wait_for_selector('body[data-bench-ready="true"]', state="attached")
    for name in ("heuristic@1", "ext@1", "jury:j@1"):
        page.get_by_label(name).check()
    page.get_by_role("button", name="Compare").click()
    page.wait_for_selector('body[data-bench-ready="true"] [data-testid="bench-graders"]', state="attached")

    expect(page.get_by_test_id("bench-scope")).to_contain_text("4 groups every chosen grader graded")
    table = page.get_by_test_id("bench-graders")
    expect(table.locator("tbody tr")).to_have_count(3)
    ext = table.locator("tr[data-grader='ext@1']")
    expect(ext).to_contain_text("$0.0100")
    expect(ext).to_contain_text("120")
    kappa = cohen_kappa_score(flat(0), flat(1), weights="quadratic", labels=[1, 2, 3])
    jury = table.locator("tr[data-grader='jury:j@1']")
    expect(jury.get_by_test_id("n-eff")).to_contain_text(f"{2 / (1 + kappa):.2f} of 2")
    expect(page.get_by_test_id("bench-paired").locator("tbody tr")).to_have_count(3)
    expect(page.get_by_test_id("bench-paired")).to_contain_text("ext@1 − heuristic@1")
    expect(page.get_by_test_id("bench-between")).to_contain_text("ext@1 vs heuristic@1")
    expect(page.get_by_test_id("bench-between")).to_contain_text(f"{kappa:.3f}")
    moves = page.get_by_test_id("bench-would-move")  # each grader's own fit, and the T1 share of its tiers
    expect(moves.locator("tbody tr")).to_have_count(3)
    expect(moves.locator("tr[data-grader='ext@1']").get_by_test_id("t1-share")).to_have_text(f"{(flat(1) == 1).mean():.3f}")
    assert page.console_log.errors == []


def test_a_reviewer_may_not_open_the_bench(client, acme, bob):
    client.force_login(bob)
    assert client.get("/projects/acme/calibration/bench/").status_code == 403
