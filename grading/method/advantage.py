"""Baseline advantages, discount factors and sum-preserving redistribution.

The numbers of docs/method.md sections 1, 3 and 4, computed for many groups at once
from one long table (one row per rollout). Pure: standard library, NumPy and pandas
only, so the trainer-facing export, the dashboard and the tests all share one
implementation without a database.

Worked example (docs/method.md section 4), n = 6: three passing rollouts graded T1, T2 and
T3, three failing ones, `mean` baseline and the default mapping.

>>> result = redistribute_group(
...     [1, 1, 1, 0, 0, 0],
...     tiers=["T1", "T2", "T3", None, None, None],
...     ranks=[1, 2, 3, None, None, None],
... )
>>> result.status
'graded'
>>> result.advantage.tolist()
[0.5, 0.5, 0.5, -0.5, -0.5, -0.5]
>>> result.factor.tolist()
[1.0, 0.85, 0.5, 1.0, 1.0, 1.0]
>>> round(result.s_plus, 6), round(result.sum_f_a, 6), round(result.lambda_, 6)
(1.5, 1.175, 1.276596)
>>> result.redistributed_advantage.round(6).tolist()
[0.638298, 0.542553, 0.319149, -0.5, -0.5, -0.5]
>>> result.discount_only_advantage.round(6).tolist()
[0.5, 0.425, 0.25, -0.5, -0.5, -0.5]
>>> round(result.dropped_credit, 6)
0.325

The same group through the table entry point, next to a group that only failed:

>>> import pandas as pd
>>> frame = pd.DataFrame({
...     "group": ["a"] * 6 + ["b"] * 2,
...     "index": [0, 1, 2, 3, 4, 5, 0, 1],
...     "reward": [1, 1, 1, 0, 0, 0, 0, 0],
...     "cheat": [False] * 8,
...     "tier": ["T1", "T2", "T3", None, None, None, None, None],
...     "rank": [1, 2, 3, None, None, None, None, None],
...     "graded": [True] * 6 + [False] * 2,
... })
>>> out = redistribute(frame)
>>> out["redistributed_advantage"].round(6).tolist()
[0.638298, 0.542553, 0.319149, -0.5, -0.5, -0.5, 0.0, 0.0]
>>> out["status"].tolist()[5:]
['graded', 'filtered', 'filtered']
>>> group_summary(out)[["group", "status", "dropped_credit"]].round(6).values.tolist()
[['a', 'graded', 0.325], ['b', 'filtered', 0.0]]

Edge cases, decided here once:

* A confirmed cheat counts as failing with reward 0, whatever tier or rank the
  grader gave it; its tier/rank is ignored and its factor is 1.
* Only passing rollouts (after cheat zeroing) take part in a band: k counts the
  distinct ranks of that tier among them.
* A group with fewer than one pass or one fail (including every group of size 1,
  and a group whose only passes were cheats) is `filtered`: advantage 0 for every
  rollout, factor 1, lambda 1. So `loo` and `grpo` never meet n = 1 in a result;
  the baseline helpers define both as 0 there rather than dividing by zero.
* A mixed group with `graded` false, or whose verdict lacks a tier or a rank for a
  passing rollout (the grader skipped it), is `fallback`: docs/method.md section 2 asks
  the verdict to cover every passing rollout, so a partial one is treated as
  invalid rather than guessed at. Baseline advantages are kept, factor 1, lambda 1.
* When all passing rollouts of a graded group share one factor (one pass, all T1,
  ...), A* is A itself, bit for bit (invariant 4), not lambda * f * A with rounding.
* If sum f*A over the passes were 0 (impossible with f > 0 and passing A > 0, which
  all three baselines give in a mixed group), lambda falls back to 1 instead of
  dividing by zero.
* Malformed input (unknown baseline or tier, rewards outside {0, 1}, a `graded`
  flag that differs inside a group, a missing group id) raises ValueError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from grading.method.tiers import TIER_INDEX as _TIER_INDEX
from grading.method.tiers import TIERS

BASELINES = ("mean", "loo", "grpo")
GRPO_EPSILON = 1e-6

GRADED, FALLBACK, FILTERED = "graded", "fallback", "filtered"
INPUT_COLUMNS = ("group", "reward", "cheat", "tier", "rank", "graded")
OUTPUT_COLUMNS = (
    "reward_used",
    "passed",
    "advantage",
    "factor",
    "lambda",
    "redistributed_advantage",
    "discount_only_advantage",
    "status",
)


@dataclass(frozen=True)
class MappingSpec:
    """Band (hi, lo) of discount factors per tier; see docs/method.md section 3."""

    t1: tuple[float, float] = (1.0, 1.0)
    t2: tuple[float, float] = (0.85, 0.70)
    t3: tuple[float, float] = (0.50, 0.50)

    def __post_init__(self) -> None:
        for tier in TIERS:
            object.__setattr__(self, tier.lower(), _checked_band(tier, getattr(self, tier.lower())))

    def band(self, tier: str) -> tuple[float, float]:
        if tier not in TIERS:
            raise ValueError(f"Unknown tier {tier!r}; expected one of {', '.join(TIERS)}")
        band: tuple[float, float] = getattr(self, tier.lower())
        return band

    def to_dict(self) -> dict[str, list[float]]:
        return {tier: list(self.band(tier)) for tier in TIERS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MappingSpec:
        """Build from {"T1": [hi, lo], ...}; a single number means hi = lo (calibrated)."""
        if set(data) != set(TIERS):
            raise ValueError(f"A mapping needs exactly the tiers {', '.join(TIERS)}; got {sorted(map(str, data))}")
        bands = {}
        for tier in TIERS:
            value = data[tier]
            bands[tier.lower()] = (value, value) if isinstance(value, (int, float)) else value
        return cls(**bands)


def _checked_band(tier: str, band: Any) -> tuple[float, float]:
    try:
        hi, lo = band
        if isinstance(hi, bool) or isinstance(lo, bool):
            raise TypeError
        hi, lo = float(hi), float(lo)
    except (TypeError, ValueError):
        raise ValueError(f"Band for {tier} must be two numbers [hi, lo]; got {band!r}") from None
    if not (0.0 < lo <= hi <= 1.0):  # also rejects NaN
        raise ValueError(f"Band for {tier} must satisfy 0 < lo <= hi <= 1; got hi={hi}, lo={lo}")
    return (hi, lo)


DEFAULT_MAPPING = MappingSpec()


def redistribute(rollouts: pd.DataFrame, *, mapping: MappingSpec = DEFAULT_MAPPING, baseline: str = "mean") -> pd.DataFrame:
    """Advantages, factors and redistribution for every group in a long table.

    Input columns: group, reward (0/1), cheat, tier ("T1"/"T2"/"T3"/missing),
    rank (group-wide, 1 = best, ties allowed; missing for failing rollouts) and
    graded (whether the group has a valid verdict, repeated on each row). Other
    columns such as `index` are carried through. Returns a copy with the rows in
    the same order and the columns of OUTPUT_COLUMNS added.
    """
    if baseline not in BASELINES:
        raise ValueError(f"Unknown baseline {baseline!r}; expected one of {', '.join(BASELINES)}")
    missing = [c for c in INPUT_COLUMNS if c not in rollouts.columns]
    if missing:
        raise ValueError(f"Rollout table lacks columns: {', '.join(missing)}")

    groups = _Groups.of(rollouts["group"])
    reward = _binary(rollouts["reward"])
    columns, status_code = _redistribute_runs(
        groups,
        reward=groups.in_runs(reward),
        cheat=groups.in_runs(_flags(rollouts["cheat"])),
        tier=groups.in_runs(_tier_codes(rollouts["tier"])),
        rank=groups.in_runs(_numbers(rollouts["rank"])),
        graded=groups.in_runs(_flags(rollouts["graded"])),
        mapping=mapping,
        baseline=baseline,
    )
    added = pd.DataFrame({name: groups.in_input_order(columns[name]) for name in OUTPUT_COLUMNS[:-1]}, copy=False)
    # Status as a categorical: codes per group, no million-string array to build.
    added["status"] = pd.Categorical.from_codes(
        groups.in_input_order(groups.spread(status_code)), dtype=_STATUS_DTYPE, validate=False
    )
    # New columns are built apart and joined once; the input's columns are shared, not
    # copied (pandas copy-on-write keeps the caller's frame unchanged).
    added.index = rollouts.index
    replaced = [c for c in OUTPUT_COLUMNS if c in rollouts.columns]
    return pd.concat([rollouts.drop(columns=replaced) if replaced else rollouts, added], axis=1)


_STATUS_DTYPE = pd.CategoricalDtype([GRADED, FALLBACK, FILTERED])


def _redistribute_runs(
    groups: _Groups,
    *,
    reward: np.ndarray,
    cheat: np.ndarray,
    tier: np.ndarray,
    rank: np.ndarray,
    graded: np.ndarray,
    mapping: MappingSpec,
    baseline: str,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The numbers of `redistribute`, on rows already in runs of groups; also each group's status code.

    Per-group statistics are one np.*.reduceat each and come back to the rows with
    np.repeat. Choices between two per-row values are made by arithmetic (x * m + y * ~m
    with m 0 or 1, exact for finite values) rather than np.where or boolean indexing:
    with a random mask those mispredict a branch per row and cost ten times more.
    """
    # Cheat zeroing comes first: every statistic below sees the zeroed rewards.
    passed = reward == 1  # an integer compare for integer rewards
    passed &= ~cheat
    reward_used = passed.astype(float)

    size = groups.sizes.astype(float)
    n_passed = groups.sum(reward_used)
    mixed = (n_passed > 0) & (n_passed < size)  # dynamic sampling (DAPO)

    graded_group = graded[groups.starts]
    if not (graded == groups.spread(graded_group)).all():
        raise ValueError("The `graded` flag must be the same on every row of a group")
    no_rank = np.isnan(rank)
    lacking = tier < 0
    lacking |= no_rank
    lacking &= passed
    is_graded = mixed & graded_group & ~groups.any(lacking)
    status_code = np.where(~mixed, 2, np.where(is_graded, 0, 1)).astype(np.int8)

    # Rewards are binary, so a group's rows take one of two baseline advantages: a pass's
    # and a fail's. No np.where(mixed, ...) needed: in a group with no pass or no fail
    # every reward equals the group's mean, so all three baselines give exactly 0 there.
    pass_advantage, fail_advantage = _binary_baseline(n_passed, size, baseline)
    if baseline == "mean":  # R - mean, as the formula reads: the same numbers in two steps
        advantage = reward_used - groups.spread(n_passed / size)
    else:
        pick = groups.spread(np.arange(0, 2 * groups.count, 2))  # a row's (group, passed) in the pairs below
        pick += passed
        advantage = np.column_stack((fail_advantage, pass_advantage)).ravel().take(pick)

    scored = passed & groups.spread(is_graded)
    factor, differs = _band_factors(groups, scored, tier, rank, no_rank, mapping)

    # Passing rollouts share their group's pass advantage a, so S+ = n_passed * a and
    # sum f*A = a * (sum of the passes' factors); a failing rollout's factor is exactly 1.
    s_plus = n_passed * pass_advantage
    sum_f_a = pass_advantage * (groups.sum(factor) - (size - n_passed))
    usable = is_graded & (sum_f_a != 0)
    lam = np.divide(s_plus, sum_f_a, out=np.ones(groups.count), where=usable)

    # Equal factors make lambda * f exactly 1 in real arithmetic; keep A bit for bit:
    # A* = A * (1 + m (lambda f - 1)) with m 0 or 1 is A itself where m = 0.
    lam_row = groups.spread(lam)
    redistributed = lam_row * factor
    redistributed -= 1.0
    redistributed *= scored & groups.spread(differs)
    redistributed += 1.0
    redistributed *= advantage
    columns = {
        "reward_used": reward_used,
        "passed": passed,
        "advantage": advantage,
        "factor": factor,
        "lambda": lam_row,
        "redistributed_advantage": redistributed,
        "discount_only_advantage": factor * advantage,
    }
    return columns, status_code


def group_summary(result: pd.DataFrame) -> pd.DataFrame:
    """One row per group of a `redistribute` result, in order of first appearance.

    Columns: group, n, n_passed, mixed, status, s_plus, lambda, sum_f_a,
    positive_credit_before (sum of positive A), positive_credit_after (sum of
    positive A*), dropped_credit (what discount-only loses: sum over passes of (1-f)A).
    """
    group = _Groups.of(result["group"]).codes
    passed = result["passed"].to_numpy(dtype=bool)
    advantage = result["advantage"].to_numpy(dtype=float)
    factor = result["factor"].to_numpy(dtype=float)
    redistributed = result["redistributed_advantage"].to_numpy(dtype=float)
    passing_advantage = np.where(passed, advantage, 0.0)
    parts = pd.DataFrame(
        {
            "code": group,
            "group": result["group"].to_numpy(),
            "passed": passed,
            "status": result["status"].to_numpy(),
            "lambda": result["lambda"].to_numpy(dtype=float),
            "s_plus": passing_advantage,
            "sum_f_a": factor * passing_advantage,
            "positive_credit_before": np.clip(advantage, 0.0, None),
            "positive_credit_after": np.clip(redistributed, 0.0, None),
            "dropped_credit": (1.0 - factor) * passing_advantage,
        }
    )
    summary = parts.groupby("code", sort=False).agg(
        group=("group", "first"),
        n=("passed", "size"),
        n_passed=("passed", "sum"),
        status=("status", "first"),
        s_plus=("s_plus", "sum"),
        **{"lambda": ("lambda", "first")},
        sum_f_a=("sum_f_a", "sum"),
        positive_credit_before=("positive_credit_before", "sum"),
        positive_credit_after=("positive_credit_after", "sum"),
        dropped_credit=("dropped_credit", "sum"),
    )
    summary.insert(3, "mixed", (summary["n_passed"] > 0) & (summary["n_passed"] < summary["n"]))
    return summary.reset_index(drop=True)


@dataclass(frozen=True)
class GroupRedistribution:
    """The numbers of one group; arrays are per rollout in input order."""

    status: str
    reward: np.ndarray
    advantage: np.ndarray
    factor: np.ndarray
    redistributed_advantage: np.ndarray
    discount_only_advantage: np.ndarray
    lambda_: float
    s_plus: float
    sum_f_a: float
    dropped_credit: float


def redistribute_group(
    rewards: Sequence[float],
    *,
    cheats: Sequence[bool] | None = None,
    tiers: Sequence[str | None] | None = None,
    ranks: Sequence[float | None] | None = None,
    graded: bool = True,
    mapping: MappingSpec = DEFAULT_MAPPING,
    baseline: str = "mean",
) -> GroupRedistribution:
    """`redistribute` for a single group given as plain lists."""
    n = len(rewards)
    frame = pd.DataFrame(
        {
            "group": np.zeros(n, dtype=int),
            "reward": np.asarray(rewards, dtype=float),
            "cheat": list(cheats) if cheats is not None else [False] * n,
            "tier": pd.Series(list(tiers) if tiers is not None else [None] * n, dtype=object),
            "rank": pd.Series(list(ranks) if ranks is not None else [None] * n, dtype=object),
            "graded": [graded] * n,
        }
    )
    out = redistribute(frame, mapping=mapping, baseline=baseline)
    summary = group_summary(out)
    first = summary.iloc[0] if n else pd.Series(dtype=object)  # read only when n
    return GroupRedistribution(
        status=str(first["status"]) if n else FILTERED,
        reward=out["reward_used"].to_numpy(),
        advantage=out["advantage"].to_numpy(),
        factor=out["factor"].to_numpy(),
        redistributed_advantage=out["redistributed_advantage"].to_numpy(),
        discount_only_advantage=out["discount_only_advantage"].to_numpy(),
        lambda_=float(first["lambda"]) if n else 1.0,
        s_plus=float(first["s_plus"]) if n else 0.0,
        sum_f_a=float(first["sum_f_a"]) if n else 0.0,
        dropped_credit=float(first["dropped_credit"]) if n else 0.0,
    )


def baseline_advantages(rewards: Sequence[float], baseline: str = "mean") -> np.ndarray:
    """Baseline advantages of one group, before dynamic sampling (docs/method.md section 1)."""
    if baseline not in BASELINES:
        raise ValueError(f"Unknown baseline {baseline!r}; expected one of {', '.join(BASELINES)}")
    reward = np.asarray(rewards, dtype=float)
    n = float(len(reward))
    total = reward.sum()
    centred_squares = ((reward - total / n) ** 2).sum() if n else 0.0
    return _baseline_formula(reward, total, n, centred_squares, baseline)


def band_factors(
    tiers: Sequence[str | None], ranks: Sequence[float | None], mapping: MappingSpec = DEFAULT_MAPPING
) -> np.ndarray:
    """Factors of one group's rollouts; 1.0 where tier or rank is missing (failing)."""
    tier = _tier_codes(pd.Series(list(tiers), dtype=object))
    rank = pd.to_numeric(pd.Series(list(ranks), dtype=object)).to_numpy(dtype=float, na_value=np.nan)
    no_rank = np.isnan(rank)
    scored = (tier >= 0) & ~no_rank
    factor, _ = _band_factors(_Groups.single(len(tier)), scored, tier, rank, no_rank, mapping)
    return factor


@dataclass
class _Groups:
    """Rows as runs of groups: each group's rows together, groups in order of first appearance.

    Rows usually arrive that way with group ids ascending (the store orders them so);
    otherwise the ids are factorized and the rows put in runs by one stable sort
    (`order`), and results go back to the input's order at the end. Per-group
    reductions are then one np.*.reduceat over the runs and np.repeat spreads a
    per-group value over its rows.
    """

    starts: np.ndarray  # first row of each run
    sizes: np.ndarray  # rows in each run
    order: np.ndarray | None  # input row of each row in run order; None when the input is in runs

    @classmethod
    def of(cls, groups: pd.Series) -> _Groups:
        values = groups.to_numpy()
        if values.dtype.kind in "iu":
            starts = cls._run_starts(values)
            if (values[starts[1:]] > values[starts[:-1]]).all():  # ascending ids: already runs
                return cls(starts, np.diff(np.r_[starts, len(values)]), None)
        codes, _ = pd.factorize(groups, sort=False)
        if (codes < 0).any():
            raise ValueError("Every rollout needs a group id")
        order = None
        if not (codes[1:] >= codes[:-1]).all():
            order = np.argsort(codes, kind="stable")
            codes = codes[order]
        starts = cls._run_starts(codes)
        return cls(starts, np.diff(np.r_[starts, len(codes)]), order)

    @staticmethod
    def _run_starts(values: np.ndarray) -> np.ndarray:
        """First row of each run of equal values."""
        starts = np.flatnonzero(values[1:] != values[:-1]) + 1
        return np.r_[0, starts] if len(values) else starts

    @classmethod
    def single(cls, n: int) -> _Groups:
        """n rows of one group (none for n = 0)."""
        return cls(np.zeros(min(n, 1), dtype=np.intp), np.array([n][: min(n, 1)], dtype=np.intp), None)

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def codes(self) -> np.ndarray:
        """0-based group number of each row, in input order."""
        return self.in_input_order(np.repeat(np.arange(self.count, dtype=np.intp), self.sizes))

    def in_runs(self, values: np.ndarray) -> np.ndarray:
        return values if self.order is None else values[self.order]

    def in_input_order(self, values: np.ndarray) -> np.ndarray:
        if self.order is None:
            return values
        out = np.empty_like(values)
        out[self.order] = values
        return out

    def spread(self, per_group: np.ndarray) -> np.ndarray:
        return np.repeat(per_group, self.sizes)

    def _reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        return ufunc.reduceat(values, self.starts) if self.count else np.zeros(0, dtype=values.dtype)

    def sum(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.add, values)

    def any(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.logical_or, values)

    def maximum(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.maximum, values)

    def minimum(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.minimum, values)

    def bitwise_or(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(np.bitwise_or, values)


def _numbers(column: pd.Series) -> np.ndarray:
    """Floats, NaN where missing; a float column is used as it is, not copied."""
    if column.dtype == np.float64:
        return column.to_numpy()
    if isinstance(column.dtype, np.dtype) and column.dtype.kind in "iub":
        return column.to_numpy(dtype=float)
    return pd.to_numeric(column).to_numpy(dtype=float, na_value=np.nan)


def _binary(column: pd.Series) -> np.ndarray:
    """The rewards as they are (integers are compared, not converted); anything but 0 and 1 is refused."""
    values = column.to_numpy() if isinstance(column.dtype, np.dtype) and column.dtype.kind in "iub" else _numbers(column)
    if values.dtype.kind == "b" or not len(values):
        return values
    if values.dtype.kind in "iu":  # as unsigned, a negative is huge: one pass finds anything but 0 and 1
        binary = values.view(f"u{values.dtype.itemsize}").max() <= 1
    else:
        binary = ((values == 0) | (values == 1)).all()
    if not binary:
        raise ValueError("Rewards must be binary (0 or 1)")
    return values


def _flags(column: pd.Series) -> np.ndarray:
    """True where the value is True; missing and anything else is False."""
    return column.to_numpy() if column.dtype == bool else column.eq(True).to_numpy()


def _tier_codes(tiers: pd.Series) -> np.ndarray:
    """0/1/2 for T1/T2/T3, -1 where the grader gave no tier, as int8.

    A categorical column (what the store hands over) costs nothing to code: with the
    categories T1, T2, T3 in that order its codes are the answer; any other column is
    factorized.
    """
    if isinstance(tiers.dtype, pd.CategoricalDtype):
        codes = tiers.cat.codes.to_numpy()
        categories = list(tiers.cat.categories)
        if categories == list(TIERS)[: len(categories)]:
            return codes.astype(np.int8, copy=False)
        lookup = np.array([_TIER_INDEX.get(c, -2) for c in categories] + [-1], dtype=np.int8)
        if (lookup == -2).any():
            used = np.bincount(codes + 1, minlength=len(lookup)) > 0  # code -1 (missing) counts in slot 0
            unknown = [c for c, code, u in zip(categories, lookup, used[1:]) if code == -2 and u]
            if unknown:
                raise ValueError(f"Unknown tier(s) {sorted(map(str, unknown))}; expected {', '.join(TIERS)}")
        return lookup[codes]
    # factorize hashes each distinct value once; mapping a million strings one by one
    # was the engine's largest cost.
    codes, uniques = pd.factorize(tiers, use_na_sentinel=True)
    lookup = np.array([_TIER_INDEX.get(u, -2) if isinstance(u, str) else -2 for u in uniques] + [-1], dtype=np.int8)
    if (lookup[:-1] == -2).any():
        unknown = [u for u, code in zip(uniques, lookup[:-1]) if code == -2]
        raise ValueError(f"Unknown tier(s) {sorted(map(str, unknown))}; expected {', '.join(TIERS)}")
    return lookup[codes]  # the NA sentinel -1 picks the trailing -1


def _baseline_formula(
    reward: np.ndarray | float,
    total: np.ndarray | float,
    n: np.ndarray | float,
    centred_squares: np.ndarray | float,
    baseline: str,
) -> np.ndarray:
    """docs/method.md section 1: A for a reward in a group of n with this total and sum of (R - mean)^2."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.divide(total, n)
    centred: np.ndarray = np.subtract(reward, mean)
    if baseline == "mean":
        return centred
    # A group of one has no "others" and no spread; 0 is its only signal-free value.
    others = np.maximum(np.subtract(n, 1.0), 1.0)
    if baseline == "loo":
        return np.where(np.greater(n, 1), reward - (total - reward) / others, 0.0)
    # ddof=1 as verl and TRL do; epsilon keeps all-equal groups finite.
    std = np.sqrt(centred_squares / others)
    return np.where(np.greater(n, 1), centred / (std + GRPO_EPSILON), 0.0)


def _binary_baseline(n_passed: np.ndarray, size: np.ndarray, baseline: str) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the baseline advantage of a pass (R = 1) and of a fail (R = 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = n_passed / size
    centred_squares = n_passed * (1.0 - mean) ** 2 + (size - n_passed) * mean**2
    return (
        _baseline_formula(1.0, n_passed, size, centred_squares, baseline),
        _baseline_formula(0.0, n_passed, size, centred_squares, baseline),
    )


_RANK_BITS = 21  # ranks 1..21 of three tiers fit one 64-bit word
_LANE = np.uint64((1 << _RANK_BITS) - 1)


def _band_rule(hi: np.ndarray, drop: np.ndarray, j: np.ndarray, k: np.ndarray) -> np.ndarray:
    """docs/method.md section 3: f = hi - (hi - lo) j / (k - 1), and hi when k = 1 (then j = 0)."""
    factor: np.ndarray = hi - drop * j / (np.maximum(k, 2) - 1)
    return factor


def _band_factors(
    groups: _Groups, scored: np.ndarray, tier: np.ndarray, rank: np.ndarray, no_rank: np.ndarray, mapping: MappingSpec
) -> tuple[np.ndarray, np.ndarray]:
    """Factors of the `scored` rows (passes of graded groups) by the band rule, 1.0 elsewhere;
    and per group whether its scored rows' factors differ.

    Position j of a rank among the k distinct ranks of its (group, tier). Rows not
    scored get band 0, whose hi is 1 and hi - lo is 0, so their factor is 1.0 exactly.
    """
    band = tier + 1  # 0 outside any band (set below), 1 + tier index inside
    band *= scored.view(np.int8)
    hi = np.array([1.0] + [mapping.band(x)[0] for x in TIERS])
    drop = np.array([0.0] + [mapping.band(x)[0] - mapping.band(x)[1] for x in TIERS])
    positions = _band_positions_bits(groups, scored, tier, rank, no_rank)
    if positions is None:
        j, k = _band_positions_sorted(groups, scored, tier, rank)
        any_factor = _band_rule(hi[band], drop[band], j, k)
        # Rows not scored count as 0 for the largest and 3 for the smallest factor.
        differs = groups.maximum(any_factor * scored) != groups.minimum(any_factor + 2.0 * ~scored)
        return any_factor, differs & groups.any(scored)
    # j < k <= 21: the rule for every (band, j, k) at once, then one lookup per row.
    j, k, group_word = positions
    span = np.arange(_RANK_BITS + 1)
    table = _band_rule(hi[:, None, None], drop[:, None, None], span[None, :, None], span[None, None, :])
    index = band.astype(np.uint16)  # below 4 * 22 * 22: small integers, cheap to compute with
    index *= _RANK_BITS + 1
    index += j
    index *= _RANK_BITS + 1
    index += k
    factor: np.ndarray = table.ravel().take(index.astype(np.intp))  # take is fastest with its own index type
    # A band's largest factor is at j = 0 and its smallest at j = k - 1 (f falls as j grows),
    # so a group's extremes come from its bands' counts rather than from its rows.
    # Indexed by a band's k, k = 0 (no such band in the group) gives -inf and inf.
    k_span = np.arange(1, _RANK_BITS + 1)
    largest, smallest = np.full(groups.count, -np.inf), np.full(groups.count, np.inf)
    for t in range(1, len(TIERS) + 1):
        k_band = np.bitwise_count((group_word >> np.uint64((t - 1) * _RANK_BITS)) & _LANE).astype(np.intp)
        np.maximum(largest, np.r_[-np.inf, table[t, 0, k_span]].take(k_band), out=largest)
        np.minimum(smallest, np.r_[np.inf, table[t, k_span - 1, k_span]].take(k_band), out=smallest)
    return factor, np.isfinite(largest) & (largest != smallest)  # no band at all: -inf and inf


def _band_positions_bits(
    groups: _Groups, scored: np.ndarray, tier: np.ndarray, rank: np.ndarray, no_rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Ranks 1..21: one 64-bit word per group with a bit per (tier, rank) among its scored rows.

    A row's tier lane of the word holds its band's distinct ranks: k is the lane's bit
    count and j the count of bits below the row's rank. No sort. Returns j and k per row
    and each group's word. Any other ranks (also on rows not scored, so a cheat's
    rank 30 sends its table to the sort) give None. NumPy shifts by 64 or more give 0.
    """
    with np.errstate(invalid="ignore"):
        position = rank.astype(np.uint8)  # NaN and ranks past 255 cast to some byte
        usable = position == rank  # a whole number 0..255
    position -= 1  # 0..20 for ranks 1..21; a rank 0 wraps to 255
    usable &= position < _RANK_BITS
    usable |= no_rank  # rows without a rank are not scored
    if not usable.all():
        return None
    lane = tier.view(np.uint8) & 3  # 0, 1, 2 (3 where a row has no tier: not scored)
    lane *= _RANK_BITS  # 0, 21, 42
    shift = lane + position
    shift &= 63
    shift |= (~scored).view(np.uint8) << 6  # 64 and up: no bit
    bit = np.left_shift(np.uint64(1), shift)
    group_word = groups.bitwise_or(bit)
    word = groups.spread(group_word)
    np.right_shift(word, lane, out=word)
    word &= _LANE  # the row's band
    k = np.bitwise_count(word)
    np.left_shift(word, 64 - position, out=word)  # keep the ranks below the row's
    return np.bitwise_count(word), k, group_word


def _band_positions_sorted(
    groups: _Groups, scored: np.ndarray, tier: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Any ranks: one sort of the scored rows by (band, rank); a new rank inside a run of a band advances j."""
    rows = np.flatnonzero(scored)
    j, k = np.zeros(len(scored)), np.ones(len(scored))
    n = len(rows)
    if n == 0:
        return j, k
    band = np.repeat(np.arange(groups.count, dtype=np.int64), groups.sizes)[rows] * 3 + tier[rows]
    order = np.lexsort((rank[rows], band))
    b, r = band[order], rank[rows][order]
    starts_band = np.empty(n, dtype=bool)
    starts_band[0] = True
    np.not_equal(b[1:], b[:-1], out=starts_band[1:])
    new_rank = starts_band.copy()
    new_rank[1:] |= r[1:] != r[:-1]
    distinct = np.cumsum(new_rank)  # running count of distinct (band, rank)
    run = np.cumsum(starts_band) - 1
    first = distinct[starts_band]
    last = distinct[np.r_[np.flatnonzero(starts_band)[1:] - 1, n - 1]]
    j[rows[order]] = distinct - first[run]
    k[rows[order]] = (last - first + 1)[run]
    return j, k
