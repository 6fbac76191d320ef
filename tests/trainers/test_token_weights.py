"""gagar_client.token_weights: the trainer's copy of method §9, against the server's vectors and
properties, and end to end against the real Django API. Standard library and the service only:
runs in the normal suite (the verl tensors are in test_verl_token_weights.py).

alice is acme's admin (turns the run's turn weights on); tess a trainer (reads the rows).
"""

from __future__ import annotations

import doctest
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gagar_client import token_weights as client_weights
from gagar_client.token_weights import check_weights, token_advantages, turn_weight_map
from grading.method import turn_weights as method
from tests.helpers.vendored import vector_cases

VECTORS = vector_cases("turn_weights")


def test_the_docstring_example():
    assert doctest.testmod(client_weights).failed == 0


@pytest.mark.parametrize("case", VECTORS, ids=[v["note"] for v in VECTORS])
def test_the_method_vectors(case):
    given_ = case["input"]
    out = token_advantages(given_["advantage"], given_["turn_weights"], given_["token_messages"], given_["mask"])
    assert out == pytest.approx(case["expected"]["token_advantages"], abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(advantage=st.floats(-3, 3, allow_nan=False), data=st.data())
def test_the_client_and_the_method_agree_and_keep_the_masked_mean(advantage, data):
    n = data.draw(st.integers(1, 50))
    token_messages = data.draw(st.lists(st.one_of(st.none(), st.integers(-1, 9)), min_size=n, max_size=n))
    mask = data.draw(st.lists(st.sampled_from([0, 1, True, False, 0.0, 1.0]), min_size=n, max_size=n))
    weights = {str(i): data.draw(st.floats(0.05, 2.0)) for i in data.draw(st.sets(st.integers(0, 9), max_size=5))}
    ours = token_advantages(advantage, weights, token_messages, mask)
    assert ours == method.token_advantages(advantage, weights, token_messages, mask)
    masked = [a for a, m in zip(ours, mask) if m == 1]
    assert all(a == 0.0 for a, m in zip(ours, mask) if m == 0)
    if masked:
        assert math.fsum(masked) / len(masked) == pytest.approx(advantage, abs=1e-12 * max(1.0, abs(advantage)))
        assert all(math.copysign(1, a) == math.copysign(1, advantage) for a in masked)  # no sign change


def test_cells_as_the_export_writes_them():
    assert check_weights('{"2": 0.5, "10": 0.5}') == {2: 0.5, 10: 0.5}  # CSV and Parquet: JSON text
    assert check_weights(None) == check_weights("") == check_weights({}) == {}
    for bad, says in (
        ({"2": 0}, "weighs 0"),
        ({"a": 0.5}, "not a message index"),
        ({"2": True}, "weighs True"),
        ("[1]", "must be an object"),
    ):
        with pytest.raises(ValueError, match=says):
            check_weights(bad)
    with pytest.raises(ValueError, match="no turn_weights column"):
        turn_weight_map([{"uid": "g", "index": 0}])


@pytest.mark.django_db(transaction=True)
def test_from_the_live_api_to_tokens(live_server, alice_token, trainer_token):
    """A step posted, graded with a wasted turn cited, read back with turn weights, spread."""
    from gagar_client import Client
    from grading.models import Group
    from grading.verdicts.store import GradeInput, record_verdict
    from tests.helpers.groups import small_group

    admin = Client(live_server.url, alice_token, project="acme")
    admin.ensure_run("r1", auto_grade="none", turn_weights=True)
    line = small_group("g@1", rewards=(1, 1, 0, 0))
    for rollout in line["rollouts"]:
        rollout["messages"] = [{"role": "user", "content": "Fix it."}] + [
            {"role": "assistant", "content": f"step {k}", "action": "ls", "observation": "w.py"} for k in range(1, 4)
        ]
    admin.post_step("r1", 1, [line])
    record_verdict(
        group=Group.objects.get(uid="g@1"),
        grader="test@1",
        status="valid",
        grades=[
            GradeInput(
                0,
                "T2",
                2,
                evidence=[
                    {"kind": "turn", "rollout": 0, "locator": "2", "note": "ls again", "category": "redundant_exploration"}
                ],
            ),
            GradeInput(1, "T1", 1),
        ],
    )

    rows = Client(live_server.url, trainer_token, project="acme").advantage_rows("r1", 1, turn_weights=True)
    weights = turn_weight_map(rows)
    assert weights == {("g@1", 0): {2: 0.5}, ("g@1", 1): {}, ("g@1", 2): {}, ("g@1", 3): {}}
    a_star = {(r["uid"], r["index"]): r["redistributed_advantage"] for r in rows}
    # rollout 0's response: tokens of messages 1, 2, 2, 3 and one padding token
    out = token_advantages(a_star[("g@1", 0)], weights[("g@1", 0)], [1, 2, 2, 3, None], [1, 1, 1, 1, 0])
    assert sum(out[:4]) / 4 == pytest.approx(a_star[("g@1", 0)], abs=1e-12)
    assert out[1] == out[2] == pytest.approx(out[0] / 2) and out[4] == 0.0
