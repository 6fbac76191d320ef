"""The agreement figures: exact agreement, confusion, quadratic κ, ordinal α, Kendall's τ-b,
pairwise accuracy, top-1 and cheat precision / recall / F1. Pure: stdlib, NumPy, pandas.

Each comes three ways: on plain arrays (two tier sequences, a units x raters matrix, two
rankings, flags against audits); on the long frame, one figure at a time (read off its
per-group statistics); and all at once from summed per-group statistics, which is what a
report and each of its bootstrap resamples use (`figures_from_sums`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from grading.method.tiers import TIERS
from reviews.stats.agreement.frame import GRADER, tier_codes
from reviews.stats.agreement.groups import _CELLS, STATISTICS, group_statistics


def _paired(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    x, y = tier_codes(a), tier_codes(b)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"need two 1-d sequences of the same length; got {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("missing tiers; drop unjudged rollouts first")
    return x.astype(np.int64), y.astype(np.int64)


def exact_agreement(grader: Any, human: Any) -> float:
    """Share of rollouts where the two tiers are equal (NaN when empty)."""
    x, y = _paired(grader, human)
    return float(np.mean(x == y)) if len(x) else float("nan")


def confusion_matrix(grader: Any, human: Any) -> np.ndarray:
    """3x3 counts, rows grader T1..T3, columns human T1..T3."""
    x, y = _paired(grader, human)
    table = np.zeros((3, 3), dtype=np.int64)
    np.add.at(table, (x - 1, y - 1), 1)
    return table


def quadratic_kappa(grader: Any, human: Any) -> float:
    """Cohen's κ with quadratic weights over the three tiers (fixed labels T1..T3)."""
    return float(_kappa(confusion_matrix(grader, human).astype(np.float64)[None])[0])


def krippendorff_alpha(matrix: Any) -> float:
    """Krippendorff's α, ordinal metric, for a units x raters matrix (NaN = not rated).

    Note the orientation: one row per unit (rollout), one column per rater — the
    transpose of the `krippendorff` package's reliability_data.
    """
    data = np.asarray(matrix, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"need a units x raters matrix; got shape {data.shape}")
    values = np.unique(data[~np.isnan(data)])
    if len(values) < 2:
        return float("nan")
    # units x values: how many raters gave value v to unit u
    unit_counts = np.stack([(data == v).sum(axis=1) for v in values], axis=1).astype(np.float64)
    m = unit_counts.sum(axis=1)
    pairable = m >= 2
    unit_counts, m = unit_counts[pairable], m[pairable]
    if len(m) == 0:
        return float("nan")
    scaled = unit_counts / (m - 1)[:, None]
    coincidence = scaled.T @ unit_counts - np.diag(scaled.sum(axis=0))
    n_v = coincidence.sum(axis=1)
    n = n_v.sum()
    # ordinal distance: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2
    cumulative = np.concatenate([[0.0], np.cumsum(n_v)])
    lo = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
    hi = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
    between = cumulative[hi + 1] - cumulative[lo]
    delta = (between - (n_v[:, None] + n_v[None, :]) / 2.0) ** 2
    disagreement_expected = float((np.outer(n_v, n_v) * delta).sum())
    if disagreement_expected == 0:
        return float("nan")
    return float(1.0 - (n - 1) * (coincidence * delta).sum() / disagreement_expected)


def kendall_tau_b(x: Any, y: Any) -> float:
    """Kendall's τ-b between two rankings of the same items (ties allowed)."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("need two 1-d sequences of the same length")
    iu = np.triu_indices(len(a), k=1)
    sa = np.sign(a[:, None] - a[None, :])[iu]
    sb = np.sign(b[:, None] - b[None, :])[iu]
    denominator = np.sqrt(float((sa * sa).sum()) * float((sb * sb).sum()))
    if denominator == 0:
        return float("nan")
    return float((sa * sb).sum() / denominator)


def cheat_scores(flagged: Any, audited: Any) -> dict[str, float]:
    """Precision, recall and F1 of cheat flags against audit decisions (NaN when undefined)."""
    p = np.asarray(flagged, dtype=bool)
    t = np.asarray(audited, dtype=bool)
    if p.shape != t.shape:
        raise ValueError("flagged and audited differ in length")
    tp = float((p & t).sum())
    precision = tp / p.sum() if p.sum() else float("nan")
    recall = tp / t.sum() if t.sum() else float("nan")
    if p.sum() + t.sum() == 0:
        f1 = float("nan")
    else:
        f1 = 2 * tp / float(p.sum() + t.sum())
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1)}


# --- figures from summed statistics -----------------------------------------------------

FIGURES = (
    "exact_agreement",
    "kappa",
    "alpha",
    "tau",
    "pairwise_accuracy",
    "top1",
    "cheat_precision",
    "cheat_recall",
    "cheat_f1",
    *(f"confusion_{c}" for c in _CELLS),
)
_QUADRATIC = (np.arange(3)[:, None] - np.arange(3)[None, :]) ** 2.0


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


def _kappa(observed: np.ndarray) -> np.ndarray:
    """Quadratic κ for each of a stack of 3x3 count tables."""
    n = observed.sum(axis=(1, 2))
    safe_n = np.where(n > 0, n, 1.0)
    expected = observed.sum(axis=2)[:, :, None] * observed.sum(axis=1)[:, None, :] / safe_n[:, None, None]
    denominator = (_QUADRATIC * expected).sum(axis=(1, 2))
    kappa = 1.0 - _ratio((_QUADRATIC * observed).sum(axis=(1, 2)), denominator)
    return np.where(n > 0, kappa, np.nan)


def _alpha(coincidence: np.ndarray) -> np.ndarray:
    """Ordinal Krippendorff α for each of a stack of 3x3 coincidence matrices."""
    n_v = coincidence.sum(axis=2)
    n = n_v.sum(axis=1)
    cumulative = np.concatenate([np.zeros((len(n_v), 1)), np.cumsum(n_v, axis=1)], axis=1)
    idx = np.arange(3)
    lo, hi = np.minimum.outer(idx, idx), np.maximum.outer(idx, idx)
    between = cumulative[:, hi + 1] - cumulative[:, lo]
    delta = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2.0) ** 2
    expected = (n_v[:, :, None] * n_v[:, None, :] * delta).sum(axis=(1, 2))
    return 1.0 - _ratio((n - 1) * (coincidence * delta).sum(axis=(1, 2)), expected)


def figures_from_sums(sums: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every figure, with the count it rests on, for each row of summed STATISTICS."""
    s = np.atleast_2d(sums)
    col = {name: s[:, i] for i, name in enumerate(STATISTICS)}
    confusion = s[:, 0:9].reshape(-1, 3, 3)
    n = confusion.sum(axis=(1, 2))
    tp, fp, fn = col["cheat_tp"], col["cheat_fp"], col["cheat_fn"]
    out = {
        "exact_agreement": (_ratio(np.trace(confusion, axis1=1, axis2=2), n), n),
        "kappa": (_kappa(confusion), n),
        "alpha": (_alpha(s[:, 9:18].reshape(-1, 3, 3)), col["pairable"]),
        "tau": (_ratio(col["tau_sum"], col["tau_groups"]), col["tau_groups"]),
        "pairwise_accuracy": (_ratio(col["pair_hits"], col["pairs"]), col["pairs"]),
        "top1": (_ratio(col["top1_hits"], col["top1_groups"]), col["top1_groups"]),
        "cheat_precision": (_ratio(tp, tp + fp), tp + fp),
        "cheat_recall": (_ratio(tp, tp + fn), tp + fn),
        "cheat_f1": (_ratio(2 * tp, 2 * tp + fp + fn), col["cheat_compared"]),
    }
    rows = confusion.sum(axis=2)
    for g in range(3):
        for h in range(3):
            out[f"confusion_{TIERS[g]}_{TIERS[h]}"] = (_ratio(confusion[:, g, h], rows[:, g]), rows[:, g])
    return out


# --- the frame-level figures one at a time ----------------------------------------------


def _point(frame: pd.DataFrame, grader: str, name: str) -> float:
    stats = group_statistics(frame, grader=grader)
    return float(figures_from_sums(stats.table.sum(axis=0))[name][0][0])


def group_taus(frame: pd.DataFrame, *, grader: str = GRADER) -> np.ndarray:
    """τ-b between the grader's ranks and the people's consensus ranks, one per group
    that has any (in the order groups first appear in the frame)."""
    stats = group_statistics(frame, grader=grader)
    taus: np.ndarray = stats.taus[stats.ranked]
    return taus


def mean_group_tau(frame: pd.DataFrame, *, grader: str = GRADER) -> float:
    """Mean over groups of τ-b (groups where τ-b is undefined are left out)."""
    return _point(frame, grader, "tau")


def pairwise_counts(frame: pd.DataFrame, *, grader: str = GRADER) -> tuple[int, int]:
    """(pairs the grader ordered like people, pairs people ordered strictly).

    A pair counts when every person who ranked both rollouts ordered them the same way
    strictly; the grader agrees when it orders them the same way strictly. Only groups
    the grader ranked count.
    """
    stats = group_statistics(frame, grader=grader)
    return int(stats.column("pair_hits").sum()), int(stats.column("pairs").sum())


def pairwise_accuracy(frame: pd.DataFrame, *, grader: str = GRADER) -> float:
    return _point(frame, grader, "pairwise_accuracy")


def top1_hits(frame: pd.DataFrame, *, grader: str = GRADER) -> np.ndarray:
    """Per group: 1.0 when a rollout the grader ranked best is among the people's best."""
    stats = group_statistics(frame, grader=grader)
    hits: np.ndarray = stats.column("top1_hits")[stats.ranked]
    return hits


def top1_agreement(frame: pd.DataFrame, *, grader: str = GRADER) -> float:
    return _point(frame, grader, "top1")
