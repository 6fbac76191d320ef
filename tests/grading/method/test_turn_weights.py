"""Per-token advantages (docs/method.md §9): the turn-weight rule and the spreading over a loss mask.

The vectors (tests/fixtures/vectors/turn_weights.jsonl) were worked out with exact
fractions from the rule a_t = A* m_t w_t / (Σ m w / Σ m), not with the module.
"""

from __future__ import annotations

import doctest
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.method import turn_weights as tw
from grading.method.turn_weights import DOWN_WEIGHT, check_weights, cited_turns, token_advantages, turn_weights
from tests.helpers.vendored import vector_cases

VECTORS = vector_cases("turn_weights")


def test_the_docstring_example():
    assert doctest.testmod(tw).failed == 0


@pytest.mark.parametrize("case", VECTORS, ids=[v["note"] for v in VECTORS])
def test_vectors(case):
    given_ = case["input"]
    out = token_advantages(given_["advantage"], given_["turn_weights"], given_["token_messages"], given_["mask"])
    assert out == pytest.approx(case["expected"]["token_advantages"], abs=1e-12)


def _turn(locator, category="wasted_effort", rollout=0, **extra):
    return {"kind": "turn", "rollout": rollout, "locator": locator, "note": "", "category": category, **extra}


def test_only_turns_of_this_rollout_cited_as_waste_are_weighted_down():
    evidence = [
        _turn("2"),
        _turn("5", "redundant_exploration"),
        _turn("3", category=None),  # a turn cited for something else (a leak, a long trajectory)
        _turn("4", category="style"),  # a category the rule does not know
        _turn("6", rollout=1),  # another rollout's turn
        {"kind": "patch", "rollout": 0, "locator": "a.py:6", "category": "wasted_effort"},
        _turn("9"),
        _turn("²"),
        _turn("1" * 40),
        _turn("-1"),
        _turn(" 7 "),  # no such message, not ASCII digits, padded
        "not a citation",
        {"kind": "turn"},
    ]
    assert cited_turns(evidence, rollout=0, n_messages=9) == {2: "wasted_effort", 5: "redundant_exploration", 7: "wasted_effort"}
    assert turn_weights(evidence, rollout=0, n_messages=9, eligible=True) == {2: DOWN_WEIGHT, 5: DOWN_WEIGHT, 7: DOWN_WEIGHT}
    assert turn_weights(evidence, rollout=0, n_messages=9, eligible=False) == {}
    assert turn_weights("garbage", rollout=0, n_messages=9, eligible=True) == {}


def test_bad_weights_and_masks_are_refused_with_what_is_wrong():
    with pytest.raises(ValueError, match="message 2 weighs 0"):
        token_advantages(0.5, {"2": 0}, [2], [1])
    with pytest.raises(ValueError, match=r"message 1 weighs -0.5"):
        check_weights({1: -0.5})
    with pytest.raises(ValueError, match="key 'x' is not a message index"):
        check_weights({"x": 0.5})
    with pytest.raises(ValueError, match=r"mask\[1\] is 2"):
        token_advantages(0.5, {}, [0, 0], [1, 2])
    with pytest.raises(ValueError, match="2 tokens, the mask 3"):
        token_advantages(0.5, {}, [0, 0], [1, 1, 1])
    with pytest.raises(ValueError, match="finite"):
        token_advantages(math.nan, {}, [0], [1])


# --- properties --------------------------------------------------------------------------------------

citations = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["turn", "turn", "patch", "test"]),
            "rollout": st.integers(0, 2),
            "locator": st.one_of(st.integers(0, 40).map(str), st.text(max_size=4)),
            "category": st.sampled_from([*tw.CITED_CATEGORIES, "other", None]),
        }
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(evidence=citations, n_messages=st.integers(0, 30), eligible=st.booleans())
def test_weights_are_positive_and_uniform_unless_eligible(evidence, n_messages, eligible):
    weights = turn_weights(evidence, rollout=0, n_messages=n_messages, eligible=eligible)
    assert all(w > 0 for w in weights.values())
    assert all(0 <= i < n_messages for i in weights)
    if not eligible:  # failing, filtered, fallback or dropped: 1 everywhere
        assert weights == {}


@st.composite
def rollouts(draw):
    n_messages = draw(st.integers(1, 12))
    n_tokens = draw(st.integers(1, 60))
    token_messages = draw(st.lists(st.one_of(st.none(), st.integers(0, n_messages - 1)), min_size=n_tokens, max_size=n_tokens))
    mask = draw(st.lists(st.sampled_from([0, 1]), min_size=n_tokens, max_size=n_tokens))
    evidence = [
        _turn(str(i), draw(st.sampled_from(tw.CITED_CATEGORIES)))
        for i in draw(st.lists(st.integers(0, n_messages - 1), max_size=n_messages))
    ]
    advantage = draw(st.floats(-4, 4, allow_nan=False, allow_infinity=False))
    passed = draw(st.booleans())
    return advantage, turn_weights(evidence, rollout=0, n_messages=n_messages, eligible=passed), token_messages, mask, passed


@settings(max_examples=500, deadline=None)
@given(case=rollouts())
def test_the_masked_mean_is_a_star_and_no_token_changes_sign(case):
    advantage, weights, token_messages, mask, passed = case
    out = token_advantages(advantage, weights, token_messages, mask)
    masked = [a for a, m in zip(out, mask) if m]
    assert all(a == 0.0 for a, m in zip(out, mask) if not m)  # only tokens the loss keeps get credit
    if not masked:
        return
    assert math.fsum(masked) / len(masked) == pytest.approx(advantage, abs=1e-12 * max(1.0, abs(advantage)))
    assert all(math.copysign(1, a) == math.copysign(1, advantage) or a == advantage == 0 for a in masked)
    if not passed:  # a failing rollout's tokens all carry its A*, exactly
        assert masked == [advantage] * len(masked)
