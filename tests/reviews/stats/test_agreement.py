"""Agreement figures (docs/method.md section 5), cross-checked against scikit-learn, scipy and
the krippendorff package. Pure, no database."""

from __future__ import annotations

import doctest
import importlib

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from reviews.stats.agreement import (
    bootstrap_ci,
    cheat_scores,
    confusion_matrix,
    consensus_table,
    exact_agreement,
    kendall_tau_b,
    krippendorff_alpha,
    mean_group_tau,
    pairwise_accuracy,
    quadratic_kappa,
    reliability_matrix,
    top1_agreement,
)


@pytest.mark.parametrize("module", ["", ".frame", ".groups", ".figures", ".report"])
def test_docstring_example_runs(module):
    assert doctest.testmod(importlib.import_module("reviews.stats.agreement" + module)).failed == 0


@pytest.mark.parametrize("seed", range(20))
def test_kappa_matches_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    a = rng.integers(1, 4, n)
    b = np.where(rng.random(n) < 0.5, a, rng.integers(1, 4, n))
    expected = cohen_kappa_score(a, b, weights="quadratic", labels=[1, 2, 3])
    assert quadratic_kappa(a, b) == pytest.approx(expected, abs=1e-9, rel=0)


@pytest.mark.parametrize("seed", range(20))
def test_alpha_matches_krippendorff_package(seed):
    rng = np.random.default_rng(seed)
    units, raters = int(rng.integers(10, 120)), int(rng.integers(2, 6))
    truth = rng.integers(1, 4, units)
    data = np.where(rng.random((units, raters)) < 0.6, truth[:, None], rng.integers(1, 4, (units, raters)))
    data = data.astype(float)
    data[rng.random((units, raters)) < 0.3] = np.nan
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement="ordinal")
    assert krippendorff_alpha(data) == pytest.approx(expected, abs=1e-9, rel=0)


@pytest.mark.parametrize("seed", range(20))
def test_tau_b_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 64))
    x = rng.integers(1, max(2, n // 2), n)  # ties on purpose
    y = rng.integers(1, n + 1, n)
    expected = kendalltau(x, y, variant="b").statistic
    assert kendall_tau_b(x, y) == pytest.approx(expected, abs=1e-9, rel=0)


def test_hand_cases():
    assert exact_agreement(["T1", "T2", "T3", "T1"], ["T1", "T3", "T3", "T2"]) == 0.5
    assert quadratic_kappa([1, 2, 3], [1, 2, 3]) == 1.0
    # complete reversal of a balanced table: observed weighted disagreement 8/3, expected 4/3
    assert quadratic_kappa([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(quadratic_kappa([2, 2], [2, 2]))
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert np.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    assert krippendorff_alpha([[1, 1], [2, 2], [3, 3], [1, np.nan]]) == 1.0
    assert confusion_matrix(["T1", "T2"], ["T3", "T2"]).tolist() == [[0, 0, 1], [0, 1, 0], [0, 0, 0]]
    assert cheat_scores([True, False, True, False], [True, True, False, False]) == {
        "precision": 0.5,
        "recall": 0.5,
        "f1": 0.5,
    }
    assert np.isnan(cheat_scores([False], [False])["precision"])


def _frame(rows):
    return pd.DataFrame(rows, columns=["group", "rollout", "rater", "tier", "rank"])


def test_frame_figures_by_hand():
    # group a: grader 1<2<3, bob 1<2<3, dan 2<1<3 -> only (0,2) and (1,2) are strict for both people
    # group b: grader ties both rollouts at rank 1, bob orders them -> a miss, top-1 still hits
    frame = _frame(
        [
            ("a", 0, "grader", "T1", 1),
            ("a", 1, "grader", "T2", 2),
            ("a", 2, "grader", "T3", 3),
            ("a", 0, "bob", "T1", 1),
            ("a", 1, "bob", "T2", 2),
            ("a", 2, "bob", "T3", 3),
            ("a", 0, "dan", "T2", 2),
            ("a", 1, "dan", "T1", 1),
            ("a", 2, "dan", "T3", 3),
            ("b", 0, "grader", "T1", 1),
            ("b", 1, "grader", "T1", 1),
            ("b", 0, "bob", "T1", 1),
            ("b", 1, "bob", "T2", 2),
        ]
    )
    table = consensus_table(frame)
    # rollout a/0: median of T1, T2 is 1.5 -> the worse tier, T2
    assert table["human_tier"].tolist() == [2, 2, 3, 1, 2]
    assert pairwise_accuracy(frame) == pytest.approx(2 / 3)
    assert top1_agreement(frame) == 1.0
    # a: consensus ranks 1.5, 1.5, 3 vs 1, 2, 3 -> tau-b = 2/sqrt(3*2); b: undefined (grader all tied)
    assert mean_group_tau(frame) == pytest.approx(2 / np.sqrt(6))
    assert reliability_matrix(frame).shape == (5, 3)


def test_bootstrap_ci_resamples_groups_and_is_reproducible():
    groups = [np.array([1, 1, 1]), np.array([0, 0]), np.array([1, 0])]
    stat = lambda gs: np.concatenate(gs).mean()  # noqa: E731
    first = bootstrap_ci(stat, groups, n_boot=200, seed=4)
    assert first == bootstrap_ci(stat, groups, n_boot=200, seed=4)
    estimate, low, high = first
    assert estimate == pytest.approx(4 / 7) and 0 <= low <= estimate <= high <= 1


def test_bootstrap_coverage_is_near_nominal():
    """200 replications x 200 resamples of 60 groups: the percentile interval of a
    pooled agreement rate should cover the true rate about 95 % of the time. The
    binomial s.d. of the coverage at 200 replications is about 0.015, and percentile
    intervals run a little short at 60 groups, so we accept 0.88 to 0.99."""
    rng = np.random.default_rng(2024)
    true_rate, n_groups, per_group = 0.7, 60, 8
    covered = 0
    for _ in range(200):
        # group-level heterogeneity: each group has its own rate around the true one
        rates = np.clip(true_rate + rng.normal(0, 0.1, n_groups), 0, 1)
        hits = rng.binomial(per_group, rates).astype(float)
        counts = np.column_stack([hits, np.full(n_groups, per_group, dtype=float)])
        _, low, high = bootstrap_ci(lambda c: c[:, 0].sum() / c[:, 1].sum(), counts, n_boot=200, seed=rng)
        covered += low <= true_rate <= high
    assert 0.88 <= covered / 200 <= 0.99


# --- the vectorised path and the reports ------------------------------------------------

from reviews.stats.agreement import (  # noqa: E402
    FIGURES,
    TIERS,
    Figure,
    agreement_report,
    ceiling_report,
    group_statistics,
    pairwise_counts,
    tier_codes,
)
from tests.helpers import naive_agreement as naive  # noqa: E402

PEOPLE = ["ann", "bob", "cy", "dee"]


def random_frame(seed: int, *, n_groups: int | None = None) -> pd.DataFrame:
    """Messy frames on purpose: groups of 1-7 rollouts, no grader or no people in some,
    0-3 people, unjudged rollouts, missing tiers and ranks, rank ties, cheat calls with
    gaps, an audit column on half the seeds, rows out of group order on half."""
    rng = np.random.default_rng(seed)
    n_groups = n_groups or int(rng.integers(1, 12))
    rows = []
    for g in range(n_groups):
        size = int(rng.integers(1, 8))
        ids = rng.permutation(20)[:size]
        truth_tier = rng.integers(1, 4, size)
        truth_rank = rng.integers(1, size + 1, size)
        raters = (["grader"] if rng.random() < 0.85 else []) + list(rng.choice(PEOPLE, int(rng.integers(0, 4)), replace=False))
        for rater in raters:
            for r in range(size):
                if rng.random() < 0.1:
                    continue
                tier = truth_tier[r] if rng.random() < 0.6 else rng.integers(1, 4)
                rank = truth_rank[r] if rng.random() < 0.6 else rng.integers(1, size + 1)
                cheat = None if rng.random() < 0.1 else bool(rng.random() < 0.25)
                rows.append(
                    (
                        f"g{g}",
                        int(ids[r]),
                        rater,
                        None if rng.random() < 0.08 else f"T{tier}",
                        np.nan if rng.random() < 0.08 else float(rank),
                        cheat,
                    )
                )
    frame = pd.DataFrame(rows, columns=["group", "rollout", "rater", "tier", "rank", "cheat"])
    if seed % 2:
        frame["audit"] = [None if rng.random() < 0.4 else bool(rng.random() < 0.3) for _ in range(len(frame))]
    if seed % 4 >= 2:
        frame = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return frame


def _same(a: float, b: float) -> bool:
    return bool((np.isnan(a) and np.isnan(b)) or abs(a - b) <= 1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_vectorised_figures_equal_the_group_by_group_computation(seed):
    frame = random_frame(seed)
    report = agreement_report(frame, n_boot=0)
    expected = naive.figures(frame)
    assert {name: report[name].value for name in FIGURES} == pytest.approx(expected, abs=1e-9, rel=0, nan_ok=True)
    assert pairwise_counts(frame) == naive.pairwise_counts(frame)
    stats = group_statistics(frame)
    ranked = stats.groups[stats.ranked]
    assert dict(zip(ranked, stats.taus[stats.ranked])) == pytest.approx(naive.group_taus(frame), nan_ok=True)
    assert dict(zip(ranked, stats.column("top1_hits")[stats.ranked])) == naive.top1_hits(frame)
    table = consensus_table(frame)
    assert report["kappa"].n == report["exact_agreement"].n == len(table)


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_intervals_equal_the_naive_bootstrap_with_the_same_draws(seed):
    frame = random_frame(seed, n_groups=7)
    report = agreement_report(frame, n_boot=15, seed=seed, level=0.9)
    expected = naive.bootstrap(frame, n_boot=15, seed=seed, level=0.9)
    for name in FIGURES:
        assert _same(report[name].lo, expected[name][0]) and _same(report[name].hi, expected[name][1]), name


def test_report_interval_is_bootstrap_ci_over_group_frames():
    # the same figure through the public bootstrap_ci: one frame per group, relabeled per draw
    frame = random_frame(11, n_groups=10)
    pieces = [g for _, g in frame.groupby("group", sort=False)]

    def kappa_of(resample):
        table = consensus_table(pd.concat([p.assign(group=k) for k, p in enumerate(resample)]))
        return quadratic_kappa(table.grader_tier, table.human_tier)

    estimate, low, high = bootstrap_ci(kappa_of, pieces, n_boot=40, seed=5)
    figure = agreement_report(frame, n_boot=40, seed=5)["kappa"]
    assert (figure.value, figure.lo, figure.hi) == pytest.approx((estimate, low, high), abs=1e-9)


def test_report_of_nothing_is_nan():
    empty = _frame([])
    report = agreement_report(empty, n_boot=10)
    assert set(report) == set(FIGURES)
    assert all(np.isnan(f.value) and np.isnan(f.lo) and f.n == 0 for f in report.values())
    # people only: nothing to say about the grader, but α over the people stands
    people = _frame([("a", 0, "bob", "T1", 1), ("a", 0, "dan", "T1", 1), ("a", 1, "bob", "T3", 2), ("a", 1, "dan", "T3", 2)])
    report = agreement_report(people, n_boot=10)
    assert np.isnan(report["kappa"].value) and report["alpha"].value == 1.0 and report["alpha"].n == 2


def test_ambiguous_frames_are_refused():
    twice = _frame([("a", 0, "bob", "T1", 1), ("a", 0, "bob", "T2", 1)])
    with pytest.raises(ValueError, match="twice"):
        agreement_report(twice)
    with pytest.raises(ValueError, match="twice"):
        consensus_table(twice)
    with pytest.raises(ValueError, match="cheat"):
        agreement_report(_frame([("a", 0, "bob", "T1", 1)]).assign(cheat=["maybe"]))
    with pytest.raises(ValueError, match="group"):
        agreement_report(_frame([(None, 0, "bob", "T1", 1)]))
    with pytest.raises(ValueError, match="Unknown tier"):
        agreement_report(_frame([("a", 0, "bob", True, 1)]))


def test_tier_codes_fast_paths_agree_with_the_rules():
    assert np.array_equal(tier_codes(["T1", None, "T3", np.nan]), [1, np.nan, 3, np.nan], equal_nan=True)
    assert np.array_equal(tier_codes(np.array([1, 2.0, np.nan, 3], dtype=object)), [1, 2, np.nan, 3], equal_nan=True)
    for bad in (["T1", "T4"], [1, 4], [1.5], [True], ["T1", 2, True]):
        with pytest.raises(ValueError, match="Unknown tier"):
            tier_codes(bad)


def test_figure_counts_say_what_each_figure_rests_on():
    frame = _frame(
        [
            ("a", 0, "grader", "T1", 1),
            ("a", 1, "grader", "T2", 2),
            ("a", 2, "grader", "T3", 3),
            ("a", 0, "bob", "T1", 1),
            ("a", 1, "bob", "T2", 3),
            ("a", 2, "bob", "T3", 2),
            ("b", 0, "grader", "T1", 1),
            ("b", 1, "grader", "T1", 2),
            ("b", 0, "bob", "T1", 2),
            ("b", 1, "bob", "T2", 1),
        ]
    ).assign(cheat=[False, True, False, False, True, True, False, False, False, False])
    report = agreement_report(frame, n_boot=50, seed=1)
    assert isinstance(report["kappa"], Figure)
    assert report["exact_agreement"] == pytest.approx(
        Figure(4 / 5, report["exact_agreement"].lo, report["exact_agreement"].hi, 5)
    )
    assert report["tau"].n == 2 and report["top1"].n == 2 and report["pairwise_accuracy"].n == 4
    assert report["pairwise_accuracy"].value == 2 / 4  # a: (0,1),(0,2) hit, (1,2) miss; b: miss
    assert report["top1"].value == 0.5
    # grader flagged a/1; people flagged a/1 and a/2
    assert (report["cheat_precision"].value, report["cheat_precision"].n) == (1.0, 1)
    assert (report["cheat_recall"].value, report["cheat_recall"].n) == (0.5, 2)
    assert report["confusion_T1_T2"].value == pytest.approx(1 / 3) and report["confusion_T1_T2"].n == 3


# --- the ceiling: people against people -------------------------------------------------


def test_ceiling_of_people_who_always_agree_is_perfect_and_ignores_the_grader():
    rng = np.random.default_rng(7)
    rows = []
    for g in range(40):
        tiers, ranks = rng.integers(1, 4, 6), rng.permutation(6) + 1
        people = ["ann", "bob", "cy"] if g % 2 else ["ann"]  # only odd groups have two (or three) people
        for r in range(6):
            rows.append((f"g{g}", r, "grader", f"T{rng.integers(1, 4)}", int(rng.integers(1, 7)), bool(rng.random() < 0.3)))
            for person in people:
                # cy, third to appear, disagrees with everyone: the ceiling takes the first two
                tier = 3 - tiers[r] + 1 if person == "cy" else tiers[r]
                rows.append((f"g{g}", r, person, f"T{tier}", int(ranks[r]), bool(r == 0)))
    frame = pd.DataFrame(rows, columns=["group", "rollout", "rater", "tier", "rank", "cheat"])
    ceiling = ceiling_report(frame, n_boot=200, seed=3)
    for name in ("exact_agreement", "kappa", "alpha", "tau", "pairwise_accuracy", "top1", "cheat_f1"):
        assert ceiling[name].value == pytest.approx(1.0) and ceiling[name].lo == pytest.approx(1.0), name
    assert ceiling["exact_agreement"].n == 20 * 6 and ceiling["tau"].n == 20
    assert agreement_report(frame, n_boot=0)["kappa"].value < 0.5  # the grader guessed


def test_ceiling_recovers_a_planted_confusion_between_people():
    rng = np.random.default_rng(11)
    planted = np.array([[0.8, 0.2, 0.0], [0.1, 0.7, 0.2], [0.0, 0.3, 0.7]])  # first's tier -> second's
    n_groups, size = 1500, 8
    first = rng.choice([1, 2, 3], size=(n_groups, size), p=[0.3, 0.4, 0.3])
    second = np.array([rng.choice([1, 2, 3], p=planted[t - 1]) for t in first.ravel()]).reshape(first.shape)
    rows = [
        (f"g{g}", r, rater, f"T{tiers[g, r]}", r + 1)
        for g in range(n_groups)
        for r in range(size)
        for rater, tiers in (("ann", first), ("bob", second))
    ]
    ceiling = ceiling_report(_frame(rows), n_boot=200, seed=0)
    joint = np.diag([0.3, 0.4, 0.3]) @ planted  # P(first, second)
    # the second person stands where the grader stands: confusion rows are bob's tiers
    given_second = (joint / joint.sum(axis=0)).T  # P(first = h | second = g)
    for g in range(3):
        for h in range(3):
            figure = ceiling[f"confusion_{TIERS[g]}_{TIERS[h]}"]
            assert figure.value == pytest.approx(given_second[g, h], abs=0.03)
            assert figure.lo <= figure.value <= figure.hi
    expected_kappa = quadratic_kappa_of_joint(joint)
    assert ceiling["kappa"].value == pytest.approx(expected_kappa, abs=0.03)


def quadratic_kappa_of_joint(joint: np.ndarray) -> float:
    weights = (np.arange(3)[:, None] - np.arange(3)[None, :]) ** 2
    expected = np.outer(joint.sum(axis=1), joint.sum(axis=0))
    return float(1 - (weights * joint).sum() / (weights * expected).sum())


@pytest.mark.parametrize("seed", range(12))
def test_ceiling_equals_the_group_by_group_computation(seed):
    frame = random_frame(seed, n_groups=10)
    pairs = naive.ceiling_frame(frame)
    expected = naive.figures(pairs, grader="second") if len(pairs) else {name: float("nan") for name in FIGURES}
    ceiling = ceiling_report(frame, n_boot=0)
    assert {name: ceiling[name].value for name in FIGURES} == pytest.approx(expected, abs=1e-9, rel=0, nan_ok=True)


def test_report_intervals_cover_a_planted_agreement_rate_near_nominally():
    """As test_bootstrap_coverage_is_near_nominal, through agreement_report on frames:
    60 groups of 8, each group's grader matching the one person at its own rate around
    0.7; the 95 % interval of exact agreement should cover 0.7 in 88-99 % of 200 runs."""
    rng = np.random.default_rng(99)
    n_groups, size = 60, 8
    group = np.repeat([f"g{g}" for g in range(n_groups)], size)
    rollout = np.tile(np.arange(size), n_groups)
    covered = 0
    for _ in range(200):
        rates = np.clip(0.7 + rng.normal(0, 0.1, n_groups), 0, 1)
        human = rng.integers(1, 4, n_groups * size)
        match = rng.random(n_groups * size) < np.repeat(rates, size)
        grader = np.where(match, human, (human + rng.integers(0, 2, human.size)) % 3 + 1)
        frame = pd.DataFrame(
            {
                "group": np.concatenate([group, group]),
                "rollout": np.concatenate([rollout, rollout]),
                "rater": ["grader"] * human.size + ["bob"] * human.size,
                "tier": np.concatenate([grader, human]),
                "rank": 1,
            }
        )
        figure = agreement_report(frame, n_boot=200, seed=rng)["exact_agreement"]
        covered += figure.lo <= 0.7 <= figure.hi
    assert 0.88 <= covered / 200 <= 0.99
