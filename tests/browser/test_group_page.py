"""The group page in real Chromium: log in, read the lanes, switch a diff, expand turns.

bob is a reviewer in acme (tests/conftest.py); he may view every group of acme.
The page runs under the enforced CSP (no inline script or style), so any console error —
a CSP refusal included — fails the test.
"""

from __future__ import annotations

import random
import re

import pytest
from playwright.sync_api import expect

from grading.ingest.demo import make_group
from grading.models import Group
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def mixed_group(acme):
    """A realistic mixed group: multi-file Python patches, real-looking turns, test outcomes."""
    line = make_group(random.Random(1), run="r1", step=1, task_number=1, n_rollouts=4, pass_rate=0.5, turns=(4, 8))
    report = ingest_groups(acme, line)
    assert report.groups_created == 1, report.as_dict()
    group = Group.objects.get(uid=line["uid"])
    assert group.is_mixed
    return line


def _group_url(live_server, line) -> str:
    return f"{live_server.url}/projects/acme/runs/{line['run']}/groups/{line['uid']}/"


def _log_in(page, username: str, password: str) -> None:
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def test_anonymous_visit_redirects_to_login(live_server, page, mixed_group):
    page.goto(_group_url(live_server, mixed_group))
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/projects/acme/runs/r1/groups/"))
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    expect(page.locator(".lane")).to_have_count(0)
    assert page.console_log.errors == []


def test_reviewer_reads_group_switches_diff_and_expands_turns(live_server, page, bob, mixed_group):
    rollouts = mixed_group["rollouts"]
    n_pass = sum(1 for r in rollouts if r["reward"] == 1)
    n_fail = len(rollouts) - n_pass

    page.goto(_group_url(live_server, mixed_group))
    _log_in(page, "bob", "bob-pass-123")  # the login form sends him on to the group page
    expect(page).to_have_url(_group_url(live_server, mixed_group))
    expect(page.get_by_role("heading", level=1)).to_have_text(mixed_group["task"]["instance_id"])

    # One lane per rollout, side by side, each with its outcome badge.
    lanes = page.locator("article.lane")
    expect(lanes).to_have_count(len(rollouts))
    expect(page.locator(".group-head .badge.pass")).to_have_text(f"{n_pass} pass")
    expect(page.locator(".group-head .badge.fail")).to_have_text(f"{n_fail} fail")
    expect(page.locator(".group-head .badge.mixed")).to_have_text("mixed: carries signal")
    for rollout in rollouts:
        outcome = "pass" if rollout["reward"] == 1 else "fail"
        expect(page.locator(f"#rollout-{rollout['index']} .lane-head .badge")).to_have_text(outcome)
    first, second = lanes.nth(0).bounding_box(), lanes.nth(1).bounding_box()
    assert second["x"] >= first["x"] + first["width"] and abs(second["y"] - first["y"]) < 2, "lanes are not side by side"

    # Diffs are unified and syntax-highlighted by default.
    target = rollouts[0]["index"]
    diff = page.locator(f"#diff-{target}")
    expect(diff.locator("table.diff.unified.hl").first).to_be_visible()
    expect(diff.locator("tr.added td.code").first).to_be_visible()
    assert diff.locator("td.code span[class^='hl-']").count() > 0, "no pygments highlighting in the diff"
    first_path = re.search(r"^diff --git a/(\S+)", rollouts[0]["patch"], re.M).group(1)
    expect(diff.locator("details.file summary code").first).to_have_text(first_path)

    # "split" swaps in the split table through htmx; the page itself does not reload.
    page.evaluate("window.__notReloaded = true")
    page.get_by_test_id(f"split-{target}").click()
    expect(diff.locator("table.diff.split").first).to_be_visible()
    expect(diff.locator("table.diff.unified")).to_have_count(0)
    expect(page.get_by_test_id(f"split-{target}")).to_have_attribute("aria-pressed", "true")
    expect(diff.locator("td.code.added").first).to_be_visible()
    assert page.evaluate("window.__notReloaded") is True
    # The other lanes keep their unified view.
    expect(page.locator(f"#diff-{rollouts[1]['index']} table.diff.unified").first).to_be_visible()

    # "Show N messages" loads that rollout's turns lazily.
    other = rollouts[1]
    n_messages = len(other["messages"])
    turns_button = page.get_by_test_id(f"turns-{other['index']}")
    expect(turns_button).to_have_text(f"Show {n_messages} messages")
    expect(page.locator(f"#turns-{other['index']} li.turn")).to_have_count(0)
    turns_button.click()
    turns = page.locator(f"#turns-{other['index']} li.turn")
    expect(turns).to_have_count(min(n_messages, 40))
    expect(turns.first.locator(".badge.role")).to_have_text(other["messages"][0]["role"])
    expect(page.locator(f"#turns-{other['index']} .turn.role-assistant .action").first).to_contain_text(
        other["messages"][2]["action"]
    )
    expect(page.get_by_test_id(f"turns-{other['index']}")).to_have_count(0)  # the button was swapped away
    assert page.evaluate("window.__notReloaded") is True

    assert page.console_log.errors == [], "console errors (CSP violations included):\n" + "\n".join(page.console_log.errors)


def test_a_real_size_group_loads_a_lanes_scratch_files_when_asked(live_server, page, bob):
    """tests/helpers/real_groups.real_size_group: 15 real rollouts of two models, patches with
    the scratch files agents leave (up to 29 files); ingested, its patches highlighted ahead
    after the commit. bob judges it blind: rollout 11's two scratch files (reproduce_issue.py,
    debug_issue.py) are listed under its fix, their diffs loaded when he opens the list."""
    from grading.models import PatchHighlight, Project
    from reviews.selectors.lanes import lanes_for
    from tests.helpers.browser import group_path, open_blind_assignment
    from tests.helpers.real_groups import producer_values, real_size_group

    line = real_size_group(0, run="r1")
    ingest_groups(Project.objects.get(name="acme"), line)
    group = Group.objects.get(uid=line["uid"])
    assert PatchHighlight.objects.filter(rollout__group=group).count() == 15
    open_blind_assignment(page, live_server, bob, group)
    expect(page).to_have_url(f"{live_server.url}{group_path(group.uid)}")
    page.wait_for_selector('body[data-group-ready="true"]', state="attached")
    lane = lanes_for(user=bob, group=group).key(11)

    extra = page.get_by_test_id(f"extra-files-{lane}")
    expect(extra.locator("> summary")).to_contain_text("+2 extra files")
    expect(extra.locator("table.diff")).to_have_count(0)  # not on the page until asked
    extra.locator("> summary").click()
    page.wait_for_selector(f'[data-testid="extra-diffs-{lane}"][data-ready="extra-files"]', state="attached")
    expect(extra.locator("details.file > summary code")).to_have_text(["reproduce_issue.py", "debug_issue.py"])
    files = extra.locator("details.file")
    files.first.locator("> summary").click()
    expect(files.first.locator("table.diff.unified tr.added").first).to_be_visible()
    assert files.first.locator("table.diff span[class^=hl-]").count() > 0  # highlighted ahead, read here
    # The fix itself stayed on the page, open, above the list.
    expect(page.locator(f"#diff-{lane} > details.file[open] > summary code").first).to_be_visible()
    html = page.content()
    assert [v for v in producer_values(line) if v in html] == []
    assert page.console_log.errors == []
