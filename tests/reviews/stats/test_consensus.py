"""Deriving a judgment's ranks where a reviewer left some blank (reviews/stats/consensus.py
fill_ranks). Pure: no database."""

from __future__ import annotations

import doctest

from hypothesis import given
from hypothesis import strategies as st

from reviews.stats import consensus
from reviews.stats.consensus import fill_ranks, rank_contradictions, ranks_from_tiers

tiers = st.sampled_from(["T1", "T2", "T3"])


def test_doctests():
    assert doctest.testmod(consensus).failed == 0


def test_one_rank_given_ranks_that_rollout_first_in_its_tier():
    # One press of `[` on #1: #1 leads the T1s, the other T1 after it, the T2 after both.
    assert fill_ranks({0: ("T1", None), 1: ("T1", 1), 3: ("T2", None)}) == {0: 2, 1: 1, 3: 3}


@st.composite
def judgments(draw):
    n = draw(st.integers(1, 8))
    items = {}
    for index in range(n):
        items[index] = (draw(tiers), None)
    # Ranks that agree with tiers for some of them: tier order, then any order within.
    for index, (tier, _) in list(items.items()):
        if draw(st.booleans()):
            items[index] = (tier, ["T1", "T2", "T3"].index(tier) * 10 + draw(st.integers(1, 9)))
    return items


@given(judgments())
def test_filled_ranks_never_contradict_tiers_and_keep_the_given_order(items):
    ranks = fill_ranks(items)
    assert set(ranks) == set(items)
    assert rank_contradictions({i: (tier, ranks[i]) for i, (tier, _) in items.items()}) == []
    given_ = {i: r for i, (_, r) in items.items() if r is not None}
    for a in given_:
        for b in given_:
            if given_[a] < given_[b] and len(given_) < len(items):
                assert ranks[a] < ranks[b]
    if not given_:
        assert ranks == ranks_from_tiers({i: t for i, (t, _) in items.items()})
    elif len(given_) == len(items):
        assert ranks == given_
