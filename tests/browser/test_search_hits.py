"""Opening a search hit keeps its context, in real Chromium, on a real long trajectory.

A group of three real mini-swe-agent trajectories (tests/fixtures/mini-swe-agent-gemini-3-pro-more)
whose lane #1 is the longest of them (175 kB of search text, 194 messages). The query is a
command the agent ran that first occurs past the 100,000th character of that rollout's text
(found from the data below), typed in the search box with no mode chosen: it reads as a
command, so it is searched as exact text. Its hit opens the group page at the turn; the hit
bar says "hit 1 of n", the match is marked and on screen with the lane's header; `n` walks
to the next hit, into a turn the page had not loaded, and Shift+N back again.

bob is a reviewer in acme (tests/conftest.py). The page runs under the enforced CSP, so any
console error (a CSP refusal included) fails the test. Every wait is on a readiness marker
the page sets (data-hits-ready="k/n" on the bar), never on time.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from grading.ingest.importers.mini_swe_agent import rollout_from_trajectory
from grading.search.query import looks_like_command, parse_query
from grading.search.text import SEPARATOR, fields, find_hits
from tests.helpers.browser import log_in
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MORE = Path(__file__).resolve().parents[1] / "fixtures" / "mini-swe-agent-gemini-3-pro-more"
LONG = "django__django-15280"  # the longest trajectory there: 175,382 characters of search text
OTHERS = ("django__django-15563", "django__django-13033")  # two more long ones, lanes #0 and #2
DEEP = 100_000  # the command must not occur before this character of the rollout's text
TURNS_PER_PAGE = 40  # reviews.views.group.TURNS_PER_PAGE: the page loads turns 40 at a time
UID = "hits-long@0"


def _rollout(instance_id: str, index: int) -> dict:
    """One real trajectory as a gagar-group/1 rollout, with its SWE-bench report's outcome."""
    traj_path = MORE / "trajs" / instance_id / f"{instance_id}.traj.json"
    report_path = MORE / "logs" / instance_id / "report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return rollout_from_trajectory(
        json.loads(traj_path.read_text()), index=index, report=report, ref=str(traj_path.relative_to(MORE))
    )


def _text(rollout: dict) -> str:
    """The rollout's text as search reads it: every field, in order (grading.search.text)."""
    return SEPARATOR.join(fields(rollout["messages"], rollout.get("patch", ""), rollout.get("tests")))


def deep_command(rollout: dict) -> tuple[str, list]:
    """The first command the agent ran (an assistant action on one line) that the search box
    takes for a command, that first occurs past character DEEP of the rollout's text, and
    whose hits lie in 3 turns or more spanning more than one page of turns (so walking them
    loads a turn the page does not show yet); with its hits, as the server finds them."""
    text = _text(rollout)
    for message in rollout["messages"]:
        command = message.get("action") or ""
        if message.get("role") != "assistant" or "\n" in command or not looks_like_command(command):
            continue
        if text.find(command) <= DEEP:
            continue
        query = parse_query(command, mode="auto")
        found = find_hits(query, rollout["messages"], rollout.get("patch", ""), rollout.get("tests"), limit=1000)
        turns = sorted({h.turn for h in found.hits if h.where == "turn"})
        if query.mode == "literal" and found.complete and len(turns) >= 3 and turns[-1] - turns[0] >= TURNS_PER_PAGE:
            return command, found.hits
    raise AssertionError(f"{LONG}: no command first occurring past character {DEEP:,} with hits over several pages of turns")


@pytest.fixture
def long_group(acme):
    rollouts = [_rollout(OTHERS[0], 0), _rollout(LONG, 1), _rollout(OTHERS[1], 2)]
    problem = next(m["content"] for m in rollouts[1]["messages"] if m["role"] == "user")
    line = {
        "format": "gagar-group/1",
        "run": "gemini-long",
        "step": 0,
        "uid": UID,
        "task": {"instance_id": LONG, "repo": "django/django", "problem_statement": problem},
        "rollouts": rollouts,
    }
    ingest_groups(acme, line)
    return rollouts[1]


def _box(locator) -> dict:
    box = locator.bounding_box()
    assert box is not None, f"{locator} is not rendered"
    return box


def assert_in_context(page, bar, command: str, turn: int, field: str) -> None:
    """The current hit's match is marked in `turn`'s `field`, on screen below the lane's header,
    and the header (with the bar) is on screen below the page's lane bar."""
    current = page.locator("mark.hit-mark.current")
    expect(current).to_have_count(1)
    expect(page.locator(f"#turn-1-{turn} [data-field={field}] mark.hit-mark.current")).to_have_text(command)
    expect(current).to_be_in_viewport()
    head = page.locator("#rollout-1 .lane-head")
    expect(head).to_be_in_viewport()
    expect(head.get_by_test_id("hit-bar")).to_be_visible()
    lane_bar, head_box, mark = _box(page.locator("#lane-bar")), _box(head), _box(current)
    assert head_box["y"] >= lane_bar["y"] + lane_bar["height"] - 1, "the lane header is under the lane bar"
    assert mark["y"] >= head_box["y"] + head_box["height"] - 1, "the match is under the lane header"
    assert mark["y"] + mark["height"] <= page.viewport_size["height"], "the match is below the screen"
    assert _box(page.locator("#rollout-1"))["y"] < head_box["y"], "the header is not held: the lane's top is on screen"


def test_open_a_deep_hit_and_walk_the_rollouts_hits(live_server, page, bob, long_group):
    command, hits = deep_command(long_group)
    assert _text(long_group).find(command) > DEEP
    n = len(hits)
    turn_hits = [(k, h) for k, h in enumerate(hits) if h.where == "turn"]
    first_k, first = turn_hits[0]
    assert first_k == 0, "the command's first hit is not in a turn"

    # The search box, no mode chosen: the command is searched as exact text.
    log_in(page, live_server, "bob", "/projects/acme/search/")
    page.get_by_test_id("search-q").fill(command)
    page.get_by_test_id("search-submit").click()
    expect(page.get_by_test_id("search-mode-used")).to_contain_text("exact text")
    result = page.get_by_test_id(f"result-{UID}-1")
    expect(result.locator("mark").first).to_have_text(command)

    # Its first hit opens the group page at that turn, far below the top of the rollout.
    link = result.get_by_test_id("hit").first
    expect(link).to_have_attribute(
        "href", re.compile(rf"/groups/{re.escape(UID)}/\?lane=1&start={first.turn}&q=.+&mode=auto&hit=0#turn-1-{first.turn}$")
    )
    link.click()
    bar = page.get_by_test_id("hit-bar")
    expect(bar).to_have_attribute("data-hits-ready", f"1/{n}")
    expect(page).to_have_url(re.compile(rf"\?lane=1&start={first.turn}&q=.+&mode=auto&hit=0#turn-1-{first.turn}$"))
    expect(bar.get_by_test_id("hit-count")).to_have_text(f"hit 1 of {n} in this rollout")
    expect(bar.get_by_test_id("hit-place")).to_have_text(f"turn {first.turn} · {first.label}")
    assert_in_context(page, bar, command, first.turn, first.field)

    # n: the next hit.
    page.keyboard.press("n")
    expect(bar).to_have_attribute("data-hits-ready", f"2/{n}")
    expect(bar.get_by_test_id("hit-count")).to_have_text(f"hit 2 of {n} in this rollout")
    assert_in_context(page, bar, command, hits[1].turn, hits[1].field)
    expect(page).to_have_url(re.compile(r"&hit=1#turn-1-"))

    # On to the first hit in a turn the page has not loaded (past the 40 turns it opened with).
    far_k, far = next((k, h) for k, h in turn_hits if h.turn >= first.turn + TURNS_PER_PAGE)
    expect(page.locator(f"#turn-1-{far.turn}")).to_have_count(0)
    for k in range(2, far_k + 1):
        page.keyboard.press("n")
        expect(bar).to_have_attribute("data-hits-ready", f"{k + 1}/{n}")
    expect(bar.get_by_test_id("hit-count")).to_have_text(f"hit {far_k + 1} of {n} in this rollout")
    assert_in_context(page, bar, command, far.turn, far.field)

    # Shift+N: back one, into a turn that window does not hold any more; the ▲ button too.
    back = hits[far_k - 1]
    page.keyboard.press("Shift+N")
    expect(bar).to_have_attribute("data-hits-ready", f"{far_k}/{n}")
    assert_in_context(page, bar, command, back.turn, back.field)
    bar.get_by_test_id("hit-prev").click()
    expect(bar).to_have_attribute("data-hits-ready", f"{far_k - 1}/{n}")
    assert_in_context(page, bar, command, hits[far_k - 2].turn, hits[far_k - 2].field)

    # A reload opens the same hit (the address followed the walk).
    page.reload()
    expect(page.get_by_test_id("hit-bar")).to_have_attribute("data-hits-ready", f"{far_k - 1}/{n}")
    assert_in_context(page, bar, command, hits[far_k - 2].turn, hits[far_k - 2].field)
    assert page.console_log.errors == []
