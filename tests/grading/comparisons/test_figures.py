"""Properties of a comparison's figures, over any judged groups: the two sides' win rates and
shares of groups led add up to one, swapping the sides swaps every figure (intervals too:
the resamples are drawn by group, whatever the sides)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from grading.comparisons.figures import Candidate, candidate_score, counts, figures

candidate = st.builds(
    Candidate,
    side=st.sampled_from(["a", "b"]),
    tier=st.sampled_from(["T1", "T2", "T3"]),
    rank=st.integers(1, 4),
    score=st.one_of(st.none(), st.floats(1, 5)),
)
judgment = st.lists(candidate, min_size=2, max_size=6).filter(lambda j: {c.side for c in j} == {"a", "b"})
groups = st.lists(st.lists(judgment, min_size=1, max_size=2), min_size=1, max_size=8)


def _swap(c: Candidate) -> Candidate:
    return Candidate("b" if c.side == "a" else "a", c.tier, c.rank, c.score)


@settings(max_examples=60, deadline=None)
@given(groups)
def test_shares_add_up_swapping_sides_swaps_figures_and_intervals_hold_estimates(judged):
    out = figures(judged, n_boot=50)
    for name in ("win_rate", "groups_led"):
        assert abs(out[name]["a"].estimate + out[name]["b"].estimate - 1) <= 2e-4
    swapped = figures([[[_swap(c) for c in j] for j in g] for g in judged], n_boot=50)
    for name, sides in out.items():
        assert sides["a"] == swapped[name]["b"] and sides["b"] == swapped[name]["a"]
        for i in sides.values():
            assert i.estimate is None or i.low <= i.high
    total = counts(judged)
    assert total["candidates_a"] + total["candidates_b"] == sum(len(j) for g in judged for j in g)


def test_a_side_that_wins_every_pair_leads_every_group():
    judged = [[[Candidate("a", "T1", 1, 5.0), Candidate("b", "T2", 2, 3.0), Candidate("b", "T3", 3, None)]]] * 5
    out = figures(judged, n_boot=100)
    assert out["win_rate"]["a"].estimate == 1.0 and out["groups_led"]["a"].estimate == 1.0
    assert out["t1_share"]["a"].estimate == 1.0 and out["t1_share"]["b"].estimate == 0.0
    assert out["rubric_score"]["a"].estimate == 5.0 and out["rubric_score"]["b"].estimate == 3.0
    assert figures([], n_boot=100)["win_rate"]["a"].estimate is None


def test_a_candidates_score_is_the_mean_of_its_numeric_dimensions():
    assert candidate_score({"solution_fit": 4, "minimality": 2}) == 3.0
    assert candidate_score({"solution_fit": True, "x": "5"}) is None and candidate_score([]) is None
