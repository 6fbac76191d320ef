"""Agreement figures (METHOD.md section 5), cross-checked against scikit-learn, scipy and
the krippendorff package. Pure, no database."""

from __future__ import annotations

import doctest

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score

from reviews import agreement
from reviews.agreement import (
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


def test_docstring_example_runs():
    assert doctest.testmod(agreement).failed == 0


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
        "precision": 0.5, "recall": 0.5, "f1": 0.5,
    }
    assert np.isnan(cheat_scores([False], [False])["precision"])


def _frame(rows):
    return pd.DataFrame(rows, columns=["group", "rollout", "rater", "tier", "rank"])


def test_frame_figures_by_hand():
    # group a: grader 1<2<3, bob 1<2<3, dan 2<1<3 -> only (0,2) and (1,2) are strict for both people
    # group b: grader ties both rollouts at rank 1, bob orders them -> a miss, top-1 still hits
    frame = _frame([
        ("a", 0, "grader", "T1", 1), ("a", 1, "grader", "T2", 2), ("a", 2, "grader", "T3", 3),
        ("a", 0, "bob", "T1", 1), ("a", 1, "bob", "T2", 2), ("a", 2, "bob", "T3", 3),
        ("a", 0, "dan", "T2", 2), ("a", 1, "dan", "T1", 1), ("a", 2, "dan", "T3", 3),
        ("b", 0, "grader", "T1", 1), ("b", 1, "grader", "T1", 1),
        ("b", 0, "bob", "T1", 1), ("b", 1, "bob", "T2", 2),
    ])
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
