"""Search in real Chromium: find a command, open the hit, land on its turn; turn the search
into cheat signals and find them in the audit queue.

erin is an auditor in acme (tests/reviews/conftest.py): she may search, see grader fields
and create cheat signals. The page runs under the enforced CSP, so any console error fails.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grading.models import CheatDecision
from tests.helpers.browser import log_in
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TARGET_TURN = 31


@pytest.fixture
def long_rollout(acme):
    """A group whose rollout 1 runs `git log -p` at message 31 of 40: far below the fold."""
    line = small_group("deep@1", rewards=(1, 0))
    messages = line["rollouts"][1]["messages"]
    while len(messages) < 40:
        n = len(messages)
        command = "git log -p" if n == TARGET_TURN else f"ls dir{n}"
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: step {n}\n```bash\n{command}\n```",
                "action": command,
                "observation": "\n".join(f"line {k}" for k in range(12)),
            }
        )
    ingest_groups(acme, line)
    return line


def test_search_a_command_open_the_hit_and_land_on_the_turn(live_server, page, erin, long_rollout):
    log_in(page, live_server, "erin", "/projects/acme/review/")
    page.get_by_test_id("nav-search-q").fill("git log -p")
    page.get_by_test_id("nav-search-q").press("Enter")
    expect(page).to_have_url(re.compile(r"/projects/acme/search/\?q=git"))
    page.get_by_test_id("search-mode").select_option("literal")
    page.get_by_test_id("search-submit").click()
    expect(page.get_by_test_id("search-count")).to_contain_text("1 matching rollout")
    result = page.get_by_test_id("result-deep@1-1")
    expect(result.locator("mark").first).to_have_text("git log -p")

    link = result.get_by_role("link", name=f"turn {TARGET_TURN}").first
    expect(link).to_have_attribute(
        "href",
        re.compile(
            rf"/groups/deep@1/\?lane=1&start={TARGET_TURN}&q=git\+log\+-p&mode=literal"
            rf"&hit=0#turn-1-{TARGET_TURN}$"
        ),
    )
    link.click()
    expect(page.get_by_test_id("hit-bar")).to_have_attribute("data-hits-ready", "1/2")  # its message and its command
    expect(page).to_have_url(re.compile(rf"/groups/deep@1/\?lane=1&start={TARGET_TURN}&.*#turn-1-{TARGET_TURN}$"))
    turn = page.locator(f"#turn-1-{TARGET_TURN}")
    expect(turn).to_be_in_viewport()
    expect(turn.locator(".action")).to_contain_text("git log -p")
    assert page.console_log.errors == []


def test_auditor_turns_a_search_into_cheat_signals(live_server, page, erin, long_rollout):
    log_in(page, live_server, "erin", "/projects/acme/search/?q=git+log+-p&mode=literal")
    expect(page.get_by_test_id("search-count")).to_contain_text("1 matching rollout")
    page.get_by_test_id("search-signal").click()
    expect(page).to_have_url(re.compile(r"/projects/acme/audit/\?status=pending&source=search$"))
    expect(page.locator(".flash")).to_contain_text("1 cheat signal created")
    signal = CheatDecision.objects.get(source="search")
    row = page.get_by_test_id(f"audit-rollout-{signal.rollout_id}")  # the audit has a row per rollout
    expect(row).to_contain_text("deep@1 #1")
    expect(row).to_contain_text("git log -p (literal)")
    assert page.console_log.errors == []
