"""grading.method.partial: the drop policy of docs/method.md section 8, without a database.

The vectors (tests/fixtures/vectors/partial.jsonl) were worked out with exact fractions by
applying sections 1-4 to the kept members by hand; the properties check that `mask` is the
full group and `recompute` is the kept members as a group of their own.
"""

from __future__ import annotations

import doctest
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.method import partial
from grading.method.advantage import redistribute
from grading.method.partial import check_policy, redistribute_kept
from tests.helpers.vendored import VECTORS

CASES = [json.loads(line) for line in (VECTORS / "partial.jsonl").read_text().splitlines()]


def _frame(rewards, tiers, ranks, dropped, group="g"):
    n = len(rewards)
    return pd.DataFrame(
        {
            "group": [group] * n,
            "index": range(n),
            "reward": rewards,
            "cheat": [False] * n,
            "tier": pd.Series(tiers, dtype=object),
            "rank": pd.Series(ranks, dtype=object),
            "graded": [True] * n,
            "dropped": pd.Series(dropped, dtype=object),
        }
    )


def test_docstring_example():
    assert doctest.testmod(partial).failed == 0


@pytest.mark.parametrize("case", CASES, ids=[f"case{c['case']}" for c in CASES])
def test_vectors(case):
    given_, expected = case["input"], case["expected"]
    out = redistribute_kept(
        _frame(given_["rewards"], given_["tiers"], given_["ranks"], given_["dropped"]),
        policy=check_policy(given_["policy"]),
        baseline=given_["baseline"],
    )
    assert out["advantage"].tolist() == pytest.approx(expected["advantage"], abs=1e-9)
    assert out["redistributed_advantage"].tolist() == pytest.approx(expected["redistributed_advantage"], abs=1e-9)
    assert out["status"].astype(str).tolist() == expected["status"]
    assert out["drop_mode"].tolist() == expected["drop_mode"]


def test_without_drops_it_is_redistribute():
    frame = _frame([1, 1, 0, 1, 0], ["T1", "T2", None, "T3", None], [1, 2, None, 3, None], [None] * 5)
    plain = redistribute(frame.drop(columns="dropped"))
    kept = redistribute_kept(frame, policy={"*": "recompute"})
    assert kept["redistributed_advantage"].tolist() == plain["redistributed_advantage"].tolist()
    assert kept["drop_mode"].tolist() == [None] * 5


@pytest.mark.parametrize(
    "policy, message",
    [
        ([], "drop_policy must be an object"),
        ({"timeout": "skip"}, "drop_policy['timeout'] must be one of mask, recompute"),
        ({"Time Out": "mask"}, "drop_policy key must be a drop reason"),
        ({f"r{i}": "mask" for i in range(51)}, "at most 50"),
    ],
)
def test_bad_policies_name_the_field(policy, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        check_policy(policy)


def test_a_reason_is_a_short_identifier():
    assert partial.check_reason("timeout") == "timeout"
    for bad in ("", "Timeout", "x" * 41, 3, "a b"):
        with pytest.raises(ValueError, match="drop reason"):
            partial.check_reason(bad)


groups = st.integers(min_value=2, max_value=12).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n),
        st.lists(st.sampled_from(["T1", "T2", "T3"]), min_size=n, max_size=n),
        st.lists(st.integers(min_value=1, max_value=4), min_size=n, max_size=n),
        st.lists(st.sampled_from([None, None, "timeout", "error"]), min_size=n, max_size=n),
        st.sampled_from(["mean", "loo", "grpo"]),
    )
)


@settings(max_examples=150, deadline=None)
@given(groups, st.sampled_from([{}, {"timeout": "recompute"}, {"*": "recompute"}, {"*": "recompute", "error": "mask"}]))
def test_mask_is_the_full_group_and_recompute_the_kept_members(group, policy):
    rewards, tiers, ranks, dropped, baseline = group
    tiers = [t if r == 1 else None for t, r in zip(tiers, rewards)]
    ranks = [k if r == 1 else None for k, r in zip(ranks, rewards)]
    frame = _frame(rewards, tiers, ranks, dropped)
    out = redistribute_kept(frame, policy=policy, baseline=baseline)
    leaves = np.array([partial.mode_of(d, policy) == "recompute" for d in dropped])
    alone = redistribute(frame[~leaves].drop(columns="dropped"), baseline=baseline) if (~leaves).any() else None
    if alone is not None:
        assert out.loc[~leaves, "redistributed_advantage"].tolist() == alone["redistributed_advantage"].tolist()
        assert out.loc[~leaves, "status"].astype(str).tolist() == alone["status"].astype(str).tolist()
        # invariant 1 of section 4 on the kept members: the passing credit is kept
        kept = out[~leaves]
        passing = kept["passed"]
        assert abs(kept.loc[passing, "redistributed_advantage"].sum() - kept.loc[passing, "advantage"].sum()) < 1e-9
    assert (out.loc[leaves, "redistributed_advantage"] == 0).all() and (out.loc[leaves, "status"] == "dropped").all()
    assert out["index"].tolist() == list(range(len(rewards)))  # rows in their order
