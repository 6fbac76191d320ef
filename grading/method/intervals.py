"""Percentile bootstrap intervals over groups (tasks, judged groups). Pure: NumPy only.

One definition for both apps: reviews' agreement figures and calibration, and grading's
comparisons of runs (grading.health.compare) resample with it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def bootstrap_ci(
    statistic: Callable[[Any], float],
    groups: Sequence[Any] | np.ndarray,
    n_boot: int = 1000,
    seed: int | np.random.Generator | None = None,
    *,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """(estimate, low, high): percentile interval of `statistic` over group resamples.

    `groups` holds one item per group (anything: a value, a per-group frame, a row of
    counts). `statistic` receives a resample of the same kind — a list for a sequence,
    an array indexed along its first axis for a NumPy array — and returns a number.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1; got {n_boot}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    estimate = float(statistic(groups))
    n = len(groups)
    if n == 0:
        return estimate, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_boot, n))
    if isinstance(groups, np.ndarray):
        values = np.array([statistic(groups[idx]) for idx in draws], dtype=np.float64)
    else:
        items = list(groups)
        values = np.array([statistic([items[i] for i in idx]) for idx in draws], dtype=np.float64)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return estimate, float("nan"), float("nan")
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return estimate, float(low), float(high)
