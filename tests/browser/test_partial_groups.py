"""Rollouts the trainer dropped, and the turn weights of per-token advantages, as people see them
in real Chromium: the group page, the step page, and the links between them.

alice is acme's admin (she sees grader verdicts). Group d1@1 has eight rollouts: #0-#2 pass,
#3-#7 fail; the trainer dropped #6 for `timeout` and #7 for `overlong`, and the run's drop
policy recomputes overlong drops (timeouts mask, the default). The run gives turn weights;
the grader cites #0's turn 3 as redundant exploration. Every test fails on a console error
or a CSP refusal.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from grading.jobs.policy import update_run_policy
from grading.method.services.computation import refresh_stale_step
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, Group, Run
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.browser import log_in
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GROUP = "/projects/acme/runs/r1/groups/d1@1/"
STEP = "/projects/acme/runs/r1/steps/1/"


@pytest.fixture
def partial_group(acme, alice):
    line = small_group("d1@1", instance_id="d-1", rewards=(1, 1, 1, 0, 0, 0, 0, 0))
    line["rollouts"][0]["messages"] = [{"role": "user", "content": "Fix the widget."}] + [
        {"role": "assistant", "content": f"step {k}", "action": "grep -rn widget .", "observation": f"hit {k}"}
        for k in range(1, 6)
    ]
    line["rollouts"][6]["dropped"] = "timeout"
    line["rollouts"][7]["dropped"] = "overlong"
    ingest_groups(acme, line)
    group = Group.objects.get(uid="d1@1")
    update_run_policy(run=group.run, changes={"drop_policy": {"overlong": "recompute"}, "turn_weights": True})
    record_verdict(
        group=group,
        grader="partial-test@1",
        status="valid",
        grades=[
            GradeInput(
                0,
                "T2",
                2,
                evidence=[
                    {
                        "kind": "turn",
                        "rollout": 0,
                        "locator": "3",
                        "note": "the same grep again",
                        "category": "redundant_exploration",
                    }
                ],
            ),
            GradeInput(1, "T1", 1),
            GradeInput(2, "T1", 1),
        ],
    )
    run = Run.objects.get(name="r1")
    refresh_stale_step(step=group.step, mapping=active_mapping(run))
    return group


def _ready(page) -> None:
    page.wait_for_selector('body[data-group-ready="true"][data-judge-ready="true"]', state="attached")


def test_the_group_page_says_what_was_dropped_and_why(live_server, page, partial_group):
    log_in(page, live_server, "alice", GROUP)
    _ready(page)
    drops = page.get_by_test_id("drops")
    expect(drops).to_contain_text("The trainer dropped 2 of the 8 rollouts from its batch")
    expect(page.get_by_test_id("drop-6")).to_have_text(
        "#6 (fail), dropped for timeout: masked: it stays in the group's numbers, so the kept rollouts get the full "
        "group's A*, and it carries no loss."
    )
    expect(page.get_by_test_id("drop-7")).to_contain_text(
        "dropped for overlong: recomputed without it: the group's numbers use the kept rollouts only"
    )
    expect(page.locator("#rollout-7")).not_to_be_in_viewport()
    page.get_by_test_id("drop-7").get_by_role("link").click()
    expect(page.locator("#rollout-7")).to_be_in_viewport()
    expect(page.get_by_test_id("lane-drop-7")).to_have_text("Dropped by the trainer for overlong · policy recompute")
    expect(page.get_by_test_id("lane-drop-6")).to_have_text("Dropped by the trainer for timeout · policy mask")
    expect(page.get_by_test_id("lane-drop-5")).to_have_count(0)
    # what the trainer receives agrees: #7 left its group, #6 stayed in it
    rows = {r.index: r for r in AdvantageResult.objects.filter(uid="d1@1")}
    assert (rows[7].status, rows[7].drop_mode, rows[6].status, rows[6].drop_mode) == ("dropped", "recompute", "graded", "mask")
    assert page.console_log.errors == [], page.console_log.errors


def test_the_group_page_shows_turn_weights_and_opens_the_cited_turn(live_server, page, partial_group):
    log_in(page, live_server, "alice", GROUP)
    _ready(page)
    weights = page.get_by_test_id("turn-weights-0")
    expect(weights).to_have_text(
        "Turn weights (per-token advantages): turn 3 weighs 0.5 (redundant exploration); every other turn 1."
    )
    expect(page.get_by_test_id("turn-weights-1")).to_contain_text("every turn 1: no turn cited as wasted")
    assert AdvantageResult.objects.get(uid="d1@1", index=0).turn_weights == {"3": 0.5}
    weights.get_by_role("link", name="turn 3").click()
    turn = page.locator("#turn-0-3")
    expect(turn).to_be_in_viewport()
    expect(turn).to_contain_text("step 3")
    assert page.console_log.errors == [], page.console_log.errors


def test_the_step_page_lists_the_drops_and_leads_to_the_lane(live_server, page, partial_group):
    log_in(page, live_server, "alice", STEP)
    section = page.get_by_test_id("step-drops")
    expect(section).to_contain_text("Dropped by the trainer 2 rollouts; the run's drop policy decides per reason")
    expect(page.get_by_test_id("drop-reason-overlong")).to_have_text(
        "overlong: 1 rollout, policy recompute: recomputed without it: the group's numbers use the kept rollouts only, "
        "and it gets no advantage (A* = 0)."
    )
    expect(page.get_by_test_id("drop-reason-timeout")).to_contain_text("timeout: 1 rollout, policy mask: masked")
    row = page.get_by_test_id("step-drop-d1@1-6")
    expect(row.locator("td")).to_have_text(["d1@1", "#6", "fail", "timeout", "mask"])
    row.get_by_role("link", name="d1@1").click()
    _ready(page)
    expect(page.locator("#rollout-6")).to_be_in_viewport()
    expect(page.get_by_test_id("lane-drop-6")).to_be_visible()
    assert page.console_log.errors == [], page.console_log.errors
