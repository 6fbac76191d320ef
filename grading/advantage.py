"""Baseline advantages, discount factors and sum-preserving redistribution.

The numbers of METHOD.md sections 1, 3 and 4, computed for many groups at once
from one long table (one row per rollout). Pure: standard library, NumPy and pandas
only, so the trainer-facing export, the dashboard and the tests all share one
implementation without a database.

Worked example (METHOD.md section 4), n = 6: three passing rollouts graded T1, T2 and
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
  passing rollout (the grader skipped it), is `fallback`: METHOD.md section 2 asks
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

TIERS = ("T1", "T2", "T3")
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
    """Band (hi, lo) of discount factors per tier; see METHOD.md section 3."""

    t1: tuple[float, float] = (1.0, 1.0)
    t2: tuple[float, float] = (0.85, 0.70)
    t3: tuple[float, float] = (0.50, 0.50)

    def __post_init__(self) -> None:
        for tier in TIERS:
            object.__setattr__(self, tier.lower(), _checked_band(tier, getattr(self, tier.lower())))

    def band(self, tier: str) -> tuple[float, float]:
        if tier not in TIERS:
            raise ValueError(f"Unknown tier {tier!r}; expected one of {', '.join(TIERS)}")
        return getattr(self, tier.lower())

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


def redistribute(
    rollouts: pd.DataFrame, *, mapping: MappingSpec = DEFAULT_MAPPING, baseline: str = "mean"
) -> pd.DataFrame:
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

    group, n_groups = _group_codes(rollouts["group"])
    reward = pd.to_numeric(rollouts["reward"]).to_numpy(dtype=float, na_value=np.nan)
    if not np.isin(reward, (0.0, 1.0)).all():
        raise ValueError("Rewards must be binary (0 or 1)")
    cheat = rollouts["cheat"].eq(True).to_numpy()
    tier = _tier_codes(rollouts["tier"])
    rank = pd.to_numeric(rollouts["rank"]).to_numpy(dtype=float, na_value=np.nan)
    graded_row = rollouts["graded"].eq(True).to_numpy()

    # Cheat zeroing comes first: every statistic below sees the zeroed rewards.
    reward_used = np.where(cheat, 0.0, reward)
    passed = reward_used == 1.0

    size = np.bincount(group, minlength=n_groups)
    n_passed = np.bincount(group, weights=passed, minlength=n_groups)
    mixed = (n_passed > 0) & (n_passed < size)  # dynamic sampling (DAPO)

    graded_votes = np.bincount(group, weights=graded_row, minlength=n_groups)
    if ((graded_votes != 0) & (graded_votes != size)).any():
        raise ValueError("The `graded` flag must be the same on every row of a group")
    incomplete = np.bincount(group, weights=passed & ((tier < 0) | np.isnan(rank)), minlength=n_groups) > 0
    is_graded = mixed & (graded_votes > 0) & ~incomplete
    status = np.where(~mixed, FILTERED, np.where(is_graded, GRADED, FALLBACK))

    advantage = np.where(mixed[group], _baseline_advantage(reward_used, group, size, baseline), 0.0)

    scored = passed & is_graded[group]
    factor = np.ones(len(reward_used))
    factor[scored] = _band_factors(group[scored], tier[scored], rank[scored], mapping)

    passing_advantage = np.where(passed, advantage, 0.0)
    s_plus = np.bincount(group, weights=passing_advantage, minlength=n_groups)
    sum_f_a = np.bincount(group, weights=factor * passing_advantage, minlength=n_groups)
    usable = is_graded & (sum_f_a != 0)
    lam = np.divide(s_plus, sum_f_a, out=np.ones(n_groups), where=usable)

    # Equal factors make lambda * f exactly 1 in real arithmetic; keep A bit for bit.
    f_min = np.full(n_groups, np.inf)
    f_max = np.full(n_groups, -np.inf)
    np.minimum.at(f_min, group[scored], factor[scored])
    np.maximum.at(f_max, group[scored], factor[scored])
    rescale = scored & (f_min != f_max)[group]

    out = rollouts.copy()
    out["reward_used"] = reward_used
    out["passed"] = passed
    out["advantage"] = advantage
    out["factor"] = factor
    out["lambda"] = lam[group]
    out["redistributed_advantage"] = np.where(rescale, lam[group] * factor * advantage, advantage)
    out["discount_only_advantage"] = factor * advantage
    out["status"] = status[group]
    return out


def group_summary(result: pd.DataFrame) -> pd.DataFrame:
    """One row per group of a `redistribute` result, in order of first appearance.

    Columns: group, n, n_passed, mixed, status, s_plus, lambda, sum_f_a,
    positive_credit_before (sum of positive A), positive_credit_after (sum of
    positive A*), dropped_credit (what discount-only loses: sum over passes of (1-f)A).
    """
    group, _ = _group_codes(result["group"])
    passed = result["passed"].to_numpy(dtype=bool)
    advantage = result["advantage"].to_numpy(dtype=float)
    factor = result["factor"].to_numpy(dtype=float)
    redistributed = result["redistributed_advantage"].to_numpy(dtype=float)
    passing_advantage = np.where(passed, advantage, 0.0)
    parts = pd.DataFrame({
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
    })
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
    frame = pd.DataFrame({
        "group": np.zeros(n, dtype=int),
        "reward": np.asarray(rewards, dtype=float),
        "cheat": list(cheats) if cheats is not None else [False] * n,
        "tier": pd.Series(list(tiers) if tiers is not None else [None] * n, dtype=object),
        "rank": pd.Series(list(ranks) if ranks is not None else [None] * n, dtype=object),
        "graded": [graded] * n,
    })
    out = redistribute(frame, mapping=mapping, baseline=baseline)
    summary = group_summary(out)
    first = summary.iloc[0] if n else None
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
    """Baseline advantages of one group, before dynamic sampling (METHOD.md section 1)."""
    if baseline not in BASELINES:
        raise ValueError(f"Unknown baseline {baseline!r}; expected one of {', '.join(BASELINES)}")
    reward = np.asarray(rewards, dtype=float)
    group = np.zeros(len(reward), dtype=np.intp)
    return _baseline_advantage(reward, group, np.bincount(group, minlength=1), baseline)


def band_factors(
    tiers: Sequence[str | None], ranks: Sequence[float | None], mapping: MappingSpec = DEFAULT_MAPPING
) -> np.ndarray:
    """Factors of one group's rollouts; 1.0 where tier or rank is missing (failing)."""
    tier = _tier_codes(pd.Series(list(tiers), dtype=object))
    rank = pd.to_numeric(pd.Series(list(ranks), dtype=object)).to_numpy(dtype=float, na_value=np.nan)
    scored = (tier >= 0) & ~np.isnan(rank)
    factor = np.ones(len(tier))
    factor[scored] = _band_factors(np.zeros(scored.sum(), dtype=np.intp), tier[scored], rank[scored], mapping)
    return factor


def _group_codes(groups: pd.Series) -> tuple[np.ndarray, int]:
    codes, uniques = pd.factorize(groups, sort=False)
    if (codes < 0).any():
        raise ValueError("Every rollout needs a group id")
    return codes.astype(np.intp), len(uniques)


def _tier_codes(tiers: pd.Series) -> np.ndarray:
    """0/1/2 for T1/T2/T3, -1 where the grader gave no tier."""
    absent = tiers.isna().to_numpy()
    codes = tiers.map({tier: i for i, tier in enumerate(TIERS)}).to_numpy(dtype=float, na_value=np.nan)
    unknown = ~absent & np.isnan(codes)
    if unknown.any():
        raise ValueError(f"Unknown tier(s) {sorted(map(str, set(tiers[unknown])))}; expected {', '.join(TIERS)}")
    return np.where(absent, -1, codes).astype(np.intp)


def _baseline_advantage(reward: np.ndarray, group: np.ndarray, size: np.ndarray, baseline: str) -> np.ndarray:
    n = size[group].astype(float)
    total = np.bincount(group, weights=reward, minlength=len(size))[group]
    mean = total / n
    # A group of one has no "others" and no spread; 0 is its only signal-free value.
    others = np.maximum(n - 1.0, 1.0)
    if baseline == "mean":
        return reward - mean
    if baseline == "loo":
        return np.where(n > 1, reward - (total - reward) / others, 0.0)
    centred = reward - mean
    # ddof=1 as verl and TRL do; epsilon keeps all-equal groups finite.
    std = np.sqrt(np.bincount(group, weights=centred**2, minlength=len(size))[group] / others)
    return np.where(n > 1, centred / (std + GRPO_EPSILON), 0.0)


def _band_factors(group: np.ndarray, tier: np.ndarray, rank: np.ndarray, mapping: MappingSpec) -> np.ndarray:
    """METHOD.md section 3: position j of a rank among the k distinct ranks of its tier."""
    if len(group) == 0:
        return np.empty(0)
    keys = pd.DataFrame({"group": group, "tier": tier, "rank": rank})
    dense = keys.groupby(["group", "tier"], sort=False)["rank"].rank(method="dense")
    k = dense.groupby([keys["group"], keys["tier"]], sort=False).transform("max").to_numpy()
    j = dense.to_numpy() - 1.0
    hi = np.array([mapping.band(t)[0] for t in TIERS])[tier]
    lo = np.array([mapping.band(t)[1] for t in TIERS])[tier]
    return np.where(k > 1, hi - (hi - lo) * j / np.maximum(k - 1.0, 1.0), hi)
