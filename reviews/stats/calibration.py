"""A tier -> discount-factor mapping fitted to what people said (docs/method.md section 5).

Pure: standard library, NumPy and pandas only, tested without a database.

From counts C[g][h] (rows: grader tier g = T1..T3, columns: human tier h) the fit adds
k pseudo-counts on the diagonal, takes the mean human quality per grader tier

    m(g) = sum_h q(h) * C'[g][h] / sum_h C'[g][h],      C'[g][h] = C[g][h] + k*[g = h],

pools adjacent violators (weights sum_h C'[g][h]) so that m does not increase from T1
to T3, and normalises f(g) = m(g) / max m. One value per tier (hi = lo).

Worked example: the grader's T1s were mostly T1 for people, but its T2s and T3s were
often T1 too, so T2 and T3 earn milder discounts than the prior (0.75, 0.5).

>>> fitted = fit_mapping([[8, 2, 0], [4, 4, 2], [2, 3, 5]])
>>> [round(v, 6) for v in fitted.m]
[0.954545, 0.795455, 0.659091]
>>> [round(v, 6) for v in fitted.f]
[1.0, 0.833333, 0.690476]
>>> {tier: [round(x, 4) for x in band] for tier, band in fitted.bands().items()}
{'T1': [1.0, 1.0], 'T2': [0.8333, 0.8333], 'T3': [0.6905, 0.6905]}

(T1: (1*9 + 0.75*2 + 0.5*0) / 11 = 0.954545; T2: (1*4 + 0.75*5 + 0.5*2) / 11 = 0.795455;
T3: (1*2 + 0.75*3 + 0.5*6) / 11 = 0.659091; f = m / 0.954545.)
With no judgments the fit is the prior q; a grader whose T2 looked better to people
than its T1 gets T1 and T2 pooled:

>>> fit_mapping([[0, 0, 0]] * 3).f
(1.0, 0.75, 0.5)
>>> [round(v, 6) for v in fit_mapping([[1, 5, 4], [6, 3, 1], [0, 0, 10]]).f]
[1.0, 1.0, 0.637681]

Bootstrap intervals resample whole groups (a group's judgments stay together):

>>> pairs = [("g1", "T1", "T1"), ("g1", "T2", "T2"), ("g2", "T1", "T2"), ("g2", "T3", "T3")]
>>> boot = bootstrap_mapping(pairs, n_boot=200, seed=7)
>>> boot.counts
((1, 1, 0), (0, 1, 0), (0, 0, 1))
>>> len(boot.intervals), all(lo <= hi for lo, hi in boot.intervals)
(3, True)

A grader tier with no pairs has no interval: its f is the prior (or its pooled
neighbour's), and resampling groups that never hold it measures nothing about it.

>>> bootstrap_mapping([("g1", "T1", "T1"), ("g2", "T3", "T2")], n_boot=50, seed=1).intervals[1] is None
True

Edge cases, decided here once:

* With k = 0 a grader tier nobody judged has no evidence: it keeps its prior value
  q(g) but weight 0 in the pooling, so it follows its neighbours when it violates
  the order. (With k > 0 every row has weight >= k and the prior enters naturally.)
* Tiers may be given as "T1".."T3" or as the integers 1..3.
* The interval is the percentile interval (2.5 %, 97.5 %) of f over resamples, and
  None for a grader tier without pairs (no judgments at all: every tier's is None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from grading.method.tiers import LEVELS, TIER_INDEX, TIERS, tier_index

DEFAULT_Q = (1.0, 0.75, 0.5)
DEFAULT_K = 1.0


@dataclass(frozen=True)
class FittedMapping:
    """A fitted mapping and what it came from."""

    f: tuple[float, float, float]
    m: tuple[float, float, float]
    counts: tuple[tuple[float, ...], ...]
    k: float
    q: tuple[float, float, float]
    intervals: tuple[tuple[float, float] | None, ...] | None = None  # None for a tier without pairs
    n_boot: int = 0
    n_groups: int | None = field(default=None)

    @property
    def n_judgments(self) -> float:
        return float(sum(map(sum, self.counts)))

    def bands(self) -> dict[str, list[float]]:
        """{"T1": [f, f], ...}: the form `grading.method.advantage.MappingSpec.from_dict` takes."""
        return {tier: [value, value] for tier, value in zip(TIERS, self.f)}

    def to_dict(self) -> dict[str, Any]:
        return {
            "f": list(self.f),
            "m": list(self.m),
            "counts": [list(row) for row in self.counts],
            "k": self.k,
            "q": list(self.q),
            "intervals": None if self.intervals is None else [None if iv is None else list(iv) for iv in self.intervals],
            "n_boot": self.n_boot,
            "n_groups": self.n_groups,
        }


def fit_mapping(
    counts: Sequence[Sequence[float]] | np.ndarray,
    *,
    q: Sequence[float] = DEFAULT_Q,
    k: float = DEFAULT_K,
) -> FittedMapping:
    """Fit f from a 3x3 count table C[g][h] (rows grader T1..T3, columns human T1..T3)."""
    table = _checked_counts(counts)
    q_arr = _checked_q(q)
    k = float(k)
    if not (k >= 0.0 and np.isfinite(k)):
        raise ValueError(f"k must be a finite number >= 0; got {k!r}")
    m = _fit_m(table[None, :, :], q_arr, k)[0]
    f = m / m.max()
    return FittedMapping(
        f=_per_tier(f),
        m=_per_tier(m),
        counts=tuple(tuple(_plain(v) for v in row) for row in table),
        k=k,
        q=_per_tier(q_arr),
    )


def _per_tier(values: np.ndarray) -> tuple[float, float, float]:
    t1, t2, t3 = (float(v) for v in values)
    return t1, t2, t3


def counts_from_pairs(pairs: Any) -> np.ndarray:
    """The 3x3 table C[g][h] from (group, grader tier, human tier) triples or a frame."""
    _, grader, human = _pairs_arrays(pairs)
    table = np.zeros((3, 3), dtype=np.int64)
    np.add.at(table, (grader, human), 1)
    return table


def bootstrap_mapping(
    pairs: Any,
    *,
    n_boot: int = 1000,
    seed: int | np.random.Generator | None = None,
    q: Sequence[float] = DEFAULT_Q,
    k: float = DEFAULT_K,
    level: float = 0.95,
) -> FittedMapping:
    """Fit on all judgments and add a percentile interval per tier, resampling groups.

    `pairs` is an iterable of (group, grader tier, human tier) triples, or a DataFrame
    with columns group, grader_tier, human_tier. Returns the full-data FittedMapping
    with `intervals` ((low, high) per tier, None for a tier without pairs), `n_boot` and
    `n_groups` filled in.
    """
    groups, grader, human = _pairs_arrays(pairs)
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1; got {n_boot}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1); got {level}")
    fitted = fit_mapping(counts_from_pairs(pairs), q=q, k=k)
    codes, uniques = pd.factorize(pd.Series(groups, dtype=object), sort=False)
    n_groups = len(uniques)
    if n_groups == 0:
        return _with_intervals(fitted, (None, None, None), n_boot, 0)
    # per-group tables, flattened: (groups, 9)
    per_group = np.zeros((n_groups, 9), dtype=np.float64)
    np.add.at(per_group, (codes, grader * 3 + human), 1.0)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=n_boot)
    tables = (draws @ per_group).reshape(n_boot, 3, 3)
    m = _fit_m(tables, np.asarray(fitted.q), fitted.k)
    f = m / m.max(axis=1, keepdims=True)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(f, [alpha, 1.0 - alpha], axis=0)
    seen = np.asarray(fitted.counts, dtype=np.float64).sum(axis=1) > 0
    intervals = tuple((float(lo), float(hi)) if has else None for lo, hi, has in zip(low, high, seen))
    return _with_intervals(fitted, intervals, n_boot, n_groups)


def _with_intervals(
    fitted: FittedMapping, intervals: tuple[tuple[float, float] | None, ...], n_boot: int, n_groups: int
) -> FittedMapping:
    return FittedMapping(
        f=fitted.f,
        m=fitted.m,
        counts=fitted.counts,
        k=fitted.k,
        q=fitted.q,
        intervals=intervals,
        n_boot=n_boot,
        n_groups=n_groups,
    )


def _fit_m(tables: np.ndarray, q: np.ndarray, k: float) -> np.ndarray:
    """Monotone m for a stack of tables (B, 3, 3) -> (B, 3)."""
    smoothed = tables + k * np.eye(3)
    weight = smoothed.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (smoothed @ q) / weight
    empty = weight == 0
    m = np.where(empty, q[None, :], m)  # no evidence: the prior, with weight 0
    return np.array([_pool_adjacent_violators(row, w) for row, w in zip(m, weight)])


def _pool_adjacent_violators(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted least-squares fit that is non-increasing (T1 >= T2 >= T3)."""
    blocks: list[list[float]] = []  # [mean, weight, length]
    for value, weight in zip(values.tolist(), weights.tolist()):
        blocks.append([value, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:
            v2, w2, n2 = blocks.pop()
            v1, w1, n1 = blocks.pop()
            if w1 + w2 > 0:
                merged = (v1 * w1 + v2 * w2) / (w1 + w2)
            else:
                merged = (v1 * n1 + v2 * n2) / (n1 + n2)
            blocks.append([merged, w1 + w2, n1 + n2])
    out: list[float] = []
    for value, _, length in blocks:
        out.extend([value] * int(length))
    return np.asarray(out)


def _checked_counts(counts: Any) -> np.ndarray:
    table = np.asarray(counts, dtype=np.float64)
    if table.shape != (3, 3):
        raise ValueError(f"counts must be a 3x3 table (grader tier x human tier); got shape {table.shape}")
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise ValueError("counts must be finite and non-negative")
    return table


def _checked_q(q: Sequence[float]) -> np.ndarray:
    q_arr = np.asarray(q, dtype=np.float64)
    if q_arr.shape != (3,) or not np.all(np.isfinite(q_arr)) or np.any(q_arr <= 0):
        raise ValueError(f"q must be three positive numbers (T1, T2, T3); got {q!r}")
    return q_arr


def _plain(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _pairs_arrays(pairs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(pairs, pd.DataFrame):
        missing = {"group", "grader_tier", "human_tier"} - set(pairs.columns)
        if missing:
            raise ValueError(f"pairs frame lacks columns {sorted(missing)}")
        frame = pairs[["group", "grader_tier", "human_tier"]]
    else:
        frame = pd.DataFrame(list(pairs), columns=["group", "grader_tier", "human_tier"])
    if frame["group"].isna().any():
        raise ValueError("every judgment needs a group id")
    return (
        frame["group"].to_numpy(dtype=object),
        _tier_codes(frame["grader_tier"]),
        _tier_codes(frame["human_tier"]),
    )


_CODES: dict[str | int, int] = dict([*TIER_INDEX.items(), *((level, level - 1) for level in LEVELS)])  # 0-based


def _tier_codes(column: pd.Series) -> np.ndarray:
    codes = column.astype(object).map(lambda t: _CODES.get(t, -1) if not isinstance(t, bool) else -1)
    bad = codes < 0
    if bad.any():
        tier_index(column[bad].iloc[0])  # raises with the offending value
    return codes.to_numpy(dtype=np.int64)
