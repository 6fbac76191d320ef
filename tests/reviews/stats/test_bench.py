"""The bench's figures recomputed independently: scikit-learn's κ, SciPy's τ-b, the
`krippendorff` package's α, plain loops for the rest, and the pairing of resamples."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from reviews.stats.bench import by_citation, compare, compared_groups, jury_n_eff, n_eff, usage_per_group

TIERS = ["T1", "T2", "T3"]


def bench_frame(seed: int, n_groups: int = 12, size: int = 4) -> pd.DataFrame:
    """Two graders, a and b, and one person, bob, on every group; a third grader c skips group 0."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(n_groups):
        truth = rng.integers(1, 4, size=size)
        for rater, noise in (("bob", 0.0), ("a", 0.2), ("b", 0.6), ("c", 0.4)):
            if rater == "c" and g == 0:
                continue
            tiers = np.where(rng.random(size) < noise, rng.integers(1, 4, size=size), truth)
            ranks = np.argsort(np.argsort(tiers + rng.random(size))) + 1
            for r in range(size):
                rows.append((f"g{g:02d}", r, rater, TIERS[tiers[r] - 1], int(ranks[r]), bool(rng.random() < 0.2)))
    return pd.DataFrame(rows, columns=["group", "rollout", "rater", "tier", "rank", "cheat"])


def only(frame: pd.DataFrame, *raters: str) -> pd.DataFrame:
    """The rows of these raters: a frame names only the compared graders and people."""
    return frame[frame.rater.isin(raters)]


def codes(series: pd.Series) -> np.ndarray:
    return series.map({"T1": 1, "T2": 2, "T3": 3}).to_numpy()


def test_each_graders_figures_match_independent_implementations():
    frame = only(bench_frame(1), "a", "b", "bob")
    bench = compare(frame, ["a", "b"], n_boot=0)
    assert bench.groups == 12
    for grader in ("a", "b"):
        wide = frame[frame.rater.isin([grader, "bob"])].pivot_table(
            index=["group", "rollout"], columns="rater", values=["tier", "rank"], aggfunc="first"
        )
        g, h = codes(wide["tier"][grader]), codes(wide["tier"]["bob"])
        figures = bench.graders[grader]
        assert figures["exact_agreement"].value == pytest.approx(np.mean(g == h))
        assert figures["kappa"].value == pytest.approx(cohen_kappa_score(g, h, weights="quadratic", labels=[1, 2, 3]))
        alpha = krippendorff.alpha(reliability_data=np.vstack([g, h]).astype(float), level_of_measurement="ordinal")
        assert figures["alpha"].value == pytest.approx(alpha)
        taus = []
        for _, block in wide.groupby(level="group"):
            tau = kendalltau(block["rank"][grader], block["rank"]["bob"], variant="b").statistic
            if not np.isnan(tau):
                taus.append(tau)
        assert figures["tau"].value == pytest.approx(np.mean(taus))
        hits = pairs = 0
        for _, block in wide.groupby(level="group"):
            mine, theirs = block["rank"][grader].to_numpy(), block["rank"]["bob"].to_numpy()
            for i in range(len(mine)):
                for j in range(i + 1, len(mine)):
                    if theirs[i] != theirs[j]:
                        pairs += 1
                        hits += np.sign(mine[i] - mine[j]) == np.sign(theirs[i] - theirs[j])
        assert figures["pairwise_accuracy"].value == pytest.approx(hits / pairs)
        flags = frame[frame.rater == grader].set_index(["group", "rollout"])["cheat"]
        calls = frame[frame.rater == "bob"].set_index(["group", "rollout"])["cheat"]
        tp = int((flags & calls).sum())
        assert figures["cheat_precision"].value == pytest.approx(tp / flags.sum())
        assert figures["cheat_recall"].value == pytest.approx(tp / calls.sum())


def test_groups_are_those_every_compared_grader_and_a_person_judged():
    frame = only(bench_frame(2), "a", "c", "bob")
    assert compared_groups(frame, ["a", "c"]) == [f"g{g:02d}" for g in range(1, 12)]
    frame = only(bench_frame(2), "a", "b", "bob")
    alone = frame[(frame.group != "g05") | (frame.rater != "bob")]  # nobody judged g05
    assert "g05" not in compared_groups(alone, ["a", "b"])
    bench = compare(only(bench_frame(2), "a", "c", "bob"), ["a", "c"], n_boot=0)
    assert bench.groups == 11 and bench.graders["a"]["exact_agreement"].n == 44


def test_paired_difference_uses_the_same_resamples_for_both():
    frame = only(bench_frame(3), "a", "b", "bob")
    bench = compare(frame, ["a", "b"], n_boot=400, seed=7)
    diff = bench.paired[("a", "b")]["exact_agreement"]
    a, b = bench.graders["a"]["exact_agreement"], bench.graders["b"]["exact_agreement"]
    assert diff.value == pytest.approx(a.value - b.value)
    # recompute: the same group draws for both, per resample
    per_group = {}
    for grader in ("a", "b"):
        wide = frame[frame.rater.isin([grader, "bob"])].pivot_table(
            index=["group", "rollout"], columns="rater", values="tier", aggfunc="first"
        )
        hits = (wide[grader] == wide["bob"]).groupby(level="group").agg(["sum", "count"])
        per_group[grader] = hits.sort_index().to_numpy(dtype=float)
    draws = np.random.default_rng(7).integers(0, 12, size=(400, 12))
    diffs = [
        per_group["a"][d, 0].sum() / per_group["a"][d, 1].sum() - per_group["b"][d, 0].sum() / per_group["b"][d, 1].sum()
        for d in draws
    ]
    low, high = np.quantile(diffs, [0.025, 0.975])
    assert (diff.lo, diff.hi) == pytest.approx((low, high))
    # pairing narrows the interval against two independent intervals' spread
    assert diff.hi - diff.lo < (a.hi - a.lo) + (b.hi - b.lo)


def test_between_graders_is_kappa_of_one_against_the_other():
    frame = bench_frame(4)
    bench = compare(frame, ["a", "b", "c"], n_boot=50)
    groups = set(compared_groups(frame, ["a", "b", "c"]))
    sub = frame[frame.group.isin(groups)]
    wide = sub.pivot_table(index=["group", "rollout"], columns="rater", values="tier", aggfunc="first")
    expected = cohen_kappa_score(codes(wide["a"]), codes(wide["c"]), weights="quadratic", labels=[1, 2, 3])
    between = bench.between[("a", "c")]
    assert between["kappa"].value == pytest.approx(expected)
    assert between["kappa"].lo <= between["kappa"].value <= between["kappa"].hi
    assert set(bench.paired) == {("a", "b"), ("a", "c"), ("b", "c")}


def test_jury_n_eff_from_members_mean_kappa():
    frame = bench_frame(5)
    wide = frame.pivot_table(index=["group", "rollout"], columns="rater", values="tier", aggfunc="first").dropna()
    kappas = [
        cohen_kappa_score(codes(wide[x]), codes(wide[y]), weights="quadratic", labels=[1, 2, 3])
        for x, y in (("a", "b"), ("a", "c"), ("b", "c"))
    ]
    groups = compared_groups(frame, ["a", "b", "c"])
    result = jury_n_eff(frame, ["a", "b", "c"], groups)
    assert result["mean_kappa"] == pytest.approx(np.mean(kappas))
    assert result["n_eff"] == pytest.approx(3 / (1 + 2 * np.mean(kappas)))
    assert jury_n_eff(frame, ["a", "a"], groups)["n"] == 1  # a member listed twice counts once


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20), st.floats(0.0, 1.0))
def test_n_eff_lies_between_one_and_n(n, rho):
    value = n_eff(n, rho)
    assert 1.0 - 1e-9 <= value <= n + 1e-9
    assert n_eff(n, 0.0) == pytest.approx(n) and n_eff(n, 1.0) == pytest.approx(1.0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_swapping_graders_negates_the_paired_difference(seed):
    frame = only(bench_frame(seed, n_groups=5, size=3), "a", "b", "bob")
    ab = compare(frame, ["a", "b"], n_boot=30, seed=1).paired[("a", "b")]
    ba = compare(frame, ["b", "a"], n_boot=30, seed=1).paired[("b", "a")]
    for name, figure in ab.items():
        other = ba[name]
        np.testing.assert_allclose([figure.value, figure.lo, figure.hi], [-other.value, -other.hi, -other.lo], atol=1e-12)


def test_a_grader_identical_to_another_agrees_perfectly_and_differs_by_zero():
    frame = only(bench_frame(6), "a", "bob")
    twin = frame[frame.rater == "a"].assign(rater="twin")
    bench = compare(pd.concat([frame, twin]), ["a", "twin"], n_boot=100)
    assert bench.between[("a", "twin")]["exact_agreement"].value == 1.0
    assert bench.paired[("a", "twin")]["kappa"] == (0.0, 0.0, 0.0, bench.graders["a"]["kappa"].n)


def test_no_common_groups_is_an_empty_bench():
    bench = compare(only(bench_frame(7), "a", "b"), ["a", "b"], n_boot=10)
    assert bench.groups == 0 and bench.graders == {"a": {}, "b": {}} and bench.paired == {}


def test_usage_per_group_means_tokens_and_cost():
    usages = {"g1": {"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.5}, "g2": {"prompt_tokens": 60}}
    out = usage_per_group(usages, ["g1", "g2", "g3"])
    assert out["tokens"] == pytest.approx(60.0) and out["cost"] == pytest.approx(0.5 / 3)
    assert np.isnan(usage_per_group({"g1": {"prompt_tokens": 3}}, ["g1"])["cost"])


def test_the_split_by_citation_is_the_bench_on_each_part_of_the_groups():
    frame = only(bench_frame(4), "a", "b", "bob")
    groups = compare(frame, ["a", "b"], n_boot=0).group_keys
    uncited = {"a": dict.fromkeys(groups[::3], 2)}  # a left every third group's verdict uncited, b none
    split = by_citation(frame, ["a", "b"], groups, uncited, n_boot=50, seed=3)
    assert (split["a"].uncited_groups, split["a"].cited_groups, split["a"].uncited_judgments) == (4, 8, 8)
    for part, kept in (("uncited", groups[::3]), ("cited", [g for g in groups if g not in groups[::3]])):
        alone = compare(frame[frame.group.isin(kept)], ["a", "b"], n_boot=50, seed=3).graders["a"]
        assert getattr(split["a"], part) == alone
    assert split["b"].uncited_groups == 0 and split["b"].cited == compare(frame, ["a", "b"], n_boot=50, seed=3).graders["b"]
    assert all(np.isnan(f.value) and f.n == 0 for f in split["b"].uncited.values())
