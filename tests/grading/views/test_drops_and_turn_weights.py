"""What the group page, the step page and the group API say of dropped rollouts (method §8), and the
group page's turn weights (method §9).

alice is acme's admin: she sees grader verdicts and sets the run's policy. bob reviews acme;
outside an assignment the grader's verdict is not loaded for him, so neither are the turn
weights that come from it. Group g@1 has four rollouts: #0 and #1 pass, #2 and #3 fail; the
trainer dropped #3 for `timeout`. The grader (test@1) cites #0's turn 1 as wasted effort.
"""

from __future__ import annotations

import json

import pytest

from grading.models import AdvantageResult, Group, Rollout
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import post_groups

pytestmark = pytest.mark.django_db

GROUP = "/projects/acme/runs/r1/groups/g@1/"
STEP = "/projects/acme/runs/r1/steps/1/"
MASK_WORDS = (
    "masked: it stays in the group&#x27;s numbers, so the kept rollouts get the full group&#x27;s A*, and it carries no loss"
)
RECOMPUTE_WORDS = "recomputed without it: the group&#x27;s numbers use the kept rollouts only, and it gets no advantage (A* = 0)"


@pytest.fixture
def dropped(client, alice_token):
    line = small_group("g@1", rewards=(1, 1, 0, 0))
    line["rollouts"][3]["dropped"] = "timeout"
    post_groups(client, alice_token, line, small_group("h@1", instance_id="t-2", rewards=(1, 0)))
    record_verdict(
        group=Group.objects.get(uid="g@1"),
        grader="test@1",
        status="valid",
        grades=[
            GradeInput(
                0,
                "T2",
                2,
                evidence=[{"kind": "turn", "rollout": 0, "locator": "1", "note": "cat again", "category": "wasted_effort"}],
            ),
            GradeInput(1, "T1", 1),
        ],
    )
    return Group.objects.get(uid="g@1")


def _patch_run(client, token, body):
    r = client.patch(
        "/api/v1/runs/r1/?project=acme",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert r.status_code == 200, r.content


def test_the_group_page_says_which_rollout_was_dropped_why_and_what_the_policy_did(
    client, bob, alice_token, dropped, django_assert_num_queries
):
    assert list(Rollout.objects.filter(group=dropped).order_by("index").values_list("dropped", flat=True)) == [
        "",
        "",
        "",
        "timeout",
    ]
    client.force_login(bob)
    # as tests/grading/views/test_pages.py counts it: the drops come with the rollouts, no query of their own
    with django_assert_num_queries(15):
        r = client.get(GROUP)
    html = r.content.decode()
    assert "1 dropped" in html
    assert "The trainer dropped 1 of the 4 rollouts from its batch" in html
    assert f"(fail), dropped for <code>timeout</code>: {MASK_WORDS}." in html
    assert 'data-testid="lane-drop-3"' in html and "policy <strong>mask</strong>" in html
    assert 'data-testid="lane-drop-0"' not in html  # kept rollouts say nothing

    _patch_run(client, alice_token, {"drop_policy": {"timeout": "recompute"}})
    html = client.get(GROUP).content.decode()
    assert f"dropped for <code>timeout</code>: {RECOMPUTE_WORDS}." in html and "policy <strong>recompute</strong>" in html
    assert (
        "dropped"
        not in client.get("/projects/acme/runs/r1/groups/h@1/")
        .content.decode()
        .split("<main")[-1]
        .split("Rollouts side by side")[0]
    )  # a group without drops shows no drop note


def test_the_step_page_lists_the_drops_with_their_reason_and_mode(client, bob, alice_token, dropped, django_assert_num_queries):
    client.force_login(bob)
    client.get(STEP)  # computes the step
    # tests/grading/views/test_pages.py's twelve, and the drops: counted per reason, then listed
    with django_assert_num_queries(14):
        r = client.get(STEP)
    html = r.content.decode()
    assert 'data-testid="step-drops"' in html and "Dropped by the trainer" in html
    assert f"<code>timeout</code>: 1 rollout, policy <strong>mask</strong>: {MASK_WORDS}." in html
    assert 'data-testid="step-drop-g@1-3"' in html and 'href="/projects/acme/runs/r1/groups/g@1/#rollout-3"' in html
    # the rows the trainer gets agree with what the page says
    row = AdvantageResult.objects.get(uid="g@1", index=3)
    assert (row.dropped, row.drop_mode, row.status) == ("timeout", "mask", "graded")

    _patch_run(client, alice_token, {"drop_policy": {"*": "recompute"}})
    html = client.get(STEP).content.decode()
    assert "policy <strong>recompute</strong>" in html
    assert AdvantageResult.objects.get(uid="g@1", index=3).status == "dropped"


def test_a_step_without_drops_pays_one_query_for_it(client, bob, alice_token, django_assert_num_queries):
    post_groups(client, alice_token, small_group("k@1", rewards=(1, 0)))
    client.force_login(bob)
    client.get(STEP)
    with django_assert_num_queries(13):
        r = client.get(STEP)
    assert 'data-testid="step-drops"' not in r.content.decode()


def test_the_group_api_names_each_drop_and_its_mode(client, alice_token, trainer_token, dropped):
    def rollouts():
        r = client.get("/api/v1/groups/g@1/?project=acme&run=r1", HTTP_AUTHORIZATION=f"Token {alice_token}")
        assert r.status_code == 200
        return {x["index"]: x for x in r.json()["rollouts"]}

    got = rollouts()
    assert (got[3]["dropped"], got[3]["drop_mode"]) == ("timeout", "mask")
    assert "dropped" not in got[0] and "drop_mode" not in got[0]
    _patch_run(client, alice_token, {"drop_policy": {"timeout": "recompute"}})
    assert rollouts()[3]["drop_mode"] == "recompute"
    # posting the detail back changes nothing: drop_mode is read only, like passed
    line = client.get("/api/v1/groups/g@1/?project=acme&run=r1", HTTP_AUTHORIZATION=f"Token {alice_token}").json()
    report = post_groups(client, alice_token, line)
    assert report["groups"]["unchanged"] == 1 and report["rollouts"]["unchanged"] == 4, report


def test_the_group_page_shows_turn_weights_when_the_run_gives_them(
    client, alice, bob, alice_token, dropped, django_assert_num_queries
):
    client.force_login(alice)
    client.get(GROUP)  # the first showing of a verdict to alice is logged as a reveal
    with django_assert_num_queries(15) as off:
        html = client.get(GROUP).content.decode()
    queries_off = len(off.captured_queries)
    assert "Turn weights" not in html  # off by default
    _patch_run(client, alice_token, {"turn_weights": True})
    client.get(STEP)  # the step's rows, with their turn weights (a trainer's export computes them too)
    # three more: the run's active mapping (its activation, the default) and the rows' weights
    with django_assert_num_queries(queries_off + 3):
        html = client.get(GROUP).content.decode()
    assert (
        'data-testid="turn-weights-0">Turn weights (per-token advantages):\n        '
        '<a href="/projects/acme/runs/r1/groups/g@1/rollouts/0/turns/?start=1#turn-0-1">turn 1</a> weighs 0.5 '
        "(wasted effort); every other turn 1.</p>"
    ) in html
    assert (
        'data-testid="turn-weights-1">Turn weights (per-token advantages):\n        every turn 1: no turn cited as wasted.'
        in html
    )
    assert 'data-testid="turn-weights-2"' not in html  # a failing rollout has no verdict section
    assert AdvantageResult.objects.get(uid="g@1", index=0).turn_weights == {"1": 0.5}
    # bob, browsing without an assignment, is not shown the grader's verdict, so not its weights either
    client.force_login(bob)
    assert "Turn weights" not in client.get(GROUP).content.decode()
