"""Reports: every figure with its bootstrap interval over groups, and the people-vs-people
ceiling. Pure: stdlib, NumPy, pandas.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from reviews.stats.agreement.figures import FIGURES, figures_from_sums
from reviews.stats.agreement.frame import GRADER, _check_columns
from reviews.stats.agreement.groups import GroupStatistics, _position_within, group_statistics


class Figure(NamedTuple):
    """A figure, its bootstrap interval over groups, and how many items it rests on:
    rollouts (exact agreement, κ; α: rollouts two raters tiered; a confusion share: the
    rollouts the grader put in that row), groups (τ, top-1), pairs (pairwise accuracy),
    flagged rollouts (cheat precision), reference cheats (recall), compared rollouts (F1)."""

    value: float
    lo: float
    hi: float
    n: int


def resample_sums(stats: GroupStatistics, n_boot: int, seed: int | np.random.Generator | None) -> np.ndarray:
    """n_boot x len(STATISTICS): the statistics summed over each resample of groups.

    Draws the same group indices as `bootstrap_ci` with the same seed, so each row equals
    the sum over the groups of the matching resample there.
    """
    n_groups = len(stats)
    if n_groups == 0:
        return np.zeros((n_boot, stats.table.shape[1]))
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_groups, size=(n_boot, n_groups))
    sums = np.empty((n_boot, stats.table.shape[1]))
    chunk = max(1, 1_000_000 // max(n_groups, 1))  # a weight block that stays in cache
    for start in range(0, n_boot, chunk):
        block = draws[start : start + chunk]
        rows = len(block)
        offsets = (np.arange(rows) * n_groups)[:, None]
        weights = np.bincount((block + offsets).ravel(), minlength=rows * n_groups).reshape(rows, n_groups)
        sums[start : start + rows] = weights.astype(np.float64) @ stats.table
    return sums


def report_from_statistics(
    stats: GroupStatistics, *, n_boot: int = 1000, seed: int | np.random.Generator | None = 0, level: float = 0.95
) -> dict[str, Figure]:
    """Every figure of FIGURES with its percentile interval over `n_boot` group resamples
    (n_boot = 0: no intervals, lo = hi = NaN)."""
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0; got {n_boot}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    point = figures_from_sums(stats.table.sum(axis=0))
    boot = figures_from_sums(resample_sums(stats, n_boot, seed)) if n_boot and len(stats) else None
    tail = (1.0 - level) / 2.0
    report = {}
    for name in FIGURES:
        value, n = float(point[name][0][0]), round(point[name][1][0])
        low = high = float("nan")
        if boot is not None:
            values = boot[name][0]
            values = values[~np.isnan(values)]
            if len(values):
                low, high = (float(x) for x in np.quantile(values, [tail, 1.0 - tail]))
        report[name] = Figure(value, low, high, n)
    return report


def agreement_report(
    frame: pd.DataFrame,
    *,
    grader: str = GRADER,
    n_boot: int = 1000,
    seed: int | np.random.Generator | None = 0,
    level: float = 0.95,
) -> dict[str, Figure]:
    """The grader against people: {name: Figure(value, lo, hi, n)} for every name in FIGURES.

    `frame` is the long frame described at the top of this module (group, rollout,
    rater, tier, rank, optional cheat and audit). Intervals resample whole groups, with
    the draws `bootstrap_ci` makes for the same seed; `n_boot=0` skips them (NaN).

    >>> frame = pd.DataFrame({
    ...     "group": ["a"] * 4 + ["b"] * 4,
    ...     "rollout": [0, 1] * 4,
    ...     "rater": ["grader", "grader", "bob", "bob"] * 2,
    ...     "tier": ["T1", "T2", "T1", "T3", "T2", "T2", "T2", "T2"],
    ...     "rank": [1, 2, 1, 2, 1, 2, 2, 1],
    ... })
    >>> report = agreement_report(frame, n_boot=100, seed=0)
    >>> report["exact_agreement"]  # 3 of 4 rollouts; resamples of a, b give 0.5 to 1
    Figure(value=0.75, lo=0.5, hi=1.0, n=4)
    >>> report["tau"]  # a: τ-b = 1, b: -1; the mean over the 2 groups
    Figure(value=0.0, lo=-1.0, hi=1.0, n=2)
    """
    return report_from_statistics(group_statistics(frame, grader=grader), n_boot=n_boot, seed=seed, level=level)


def ceiling_frame(frame: pd.DataFrame, *, grader: str = GRADER) -> pd.DataFrame:
    """The first two people of every group two or more people judged, renamed "first" and
    "second" (order of first appearance in the frame), the grader's rows and `audit` dropped."""
    _check_columns(frame)
    people = frame[(frame["rater"] != grader).to_numpy()]
    group, _ = pd.factorize(people["group"], sort=False)
    rater, raters = pd.factorize(people["rater"], sort=False)
    person, keys = pd.factorize(group.astype(np.int64) * max(len(raters), 1) + rater, sort=False)
    person_group = keys // max(len(raters), 1)
    slot = _position_within(person_group)
    reviewers = np.bincount(person_group, minlength=group.max() + 1 if len(group) else 0)
    row_slot = slot[person]
    keep = (row_slot < 2) & (reviewers[group] >= 2)
    out = people[keep].drop(columns=[c for c in ("audit",) if c in people.columns]).copy()
    out["rater"] = np.where(row_slot[keep] == 0, "first", "second")
    return out


def ceiling_report(
    frame: pd.DataFrame,
    *,
    grader: str = GRADER,
    n_boot: int = 1000,
    seed: int | np.random.Generator | None = 0,
    level: float = 0.95,
) -> dict[str, Figure]:
    """People against people on the groups two people judged: the same figures as
    `agreement_report`, the second person in the grader's place and the first as "the
    people" (κ, α, τ, exact agreement, top-1 and F1 do not depend on which is which;
    pairwise accuracy counts the pairs the first ordered strictly, and precision and
    recall swap). Cheat calls are scored against the first person's, not against audits.
    Intervals resample the overlap groups."""
    return agreement_report(ceiling_frame(frame, grader=grader), grader="second", n_boot=n_boot, seed=seed, level=level)
