"""Two runs at one step, task by task: the differences the method's paper reports (pass rate,
turns, tokens) with a bootstrap interval over the tasks both runs have. Pure: no Django.

A task's figure is the mean over its rollouts at that step (its group's pass rate, its mean
tokens); the difference is paired by task, so tasks one run solved more often are not mixed
with tasks the other never saw.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from grading.method.intervals import bootstrap_ci

N_BOOT = 2_000


@dataclass(frozen=True)
class Difference:
    figure: str
    n_tasks: int
    base: float  # the first run's mean over the common tasks
    other: float  # the second run's
    difference: float  # other − base
    low: float  # 95 % interval of the difference
    high: float

    @property
    def relative(self) -> float | None:
        """The difference as a share of the first run's mean (−0.156 for "turns fell 15.6 %")."""
        return self.difference / self.base if self.base else None

    def as_dict(self) -> dict[str, object]:
        return {
            "figure": self.figure,
            "tasks": self.n_tasks,
            "base": self.base,
            "other": self.other,
            "difference": self.difference,
            "interval": [self.low, self.high],
            "relative": self.relative,
        }


def paired_difference(
    figure: str, base: Mapping[str, float], other: Mapping[str, float], *, n_boot: int = N_BOOT, seed: int = 0
) -> Difference | None:
    """`other` − `base` over the tasks both have (None when they share none), with a percentile
    bootstrap interval over those tasks."""
    tasks = sorted(set(base) & set(other))
    values = [(base[t], other[t]) for t in tasks if math.isfinite(base[t]) and math.isfinite(other[t])]
    if not values:
        return None
    pairs = np.array(values, dtype=np.float64)
    estimate, low, high = bootstrap_ci(lambda rows: float(np.mean(rows[:, 1] - rows[:, 0])), pairs, n_boot=n_boot, seed=seed)
    if len(values) == 1:
        low = high = estimate
    return Difference(figure, len(values), float(pairs[:, 0].mean()), float(pairs[:, 1].mean()), estimate, low, high)
