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
    group, n_groups = groups.codes, groups.count
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

    size = groups.size
    n_passed = groups.sum(passed)
    mixed = (n_passed > 0) & (n_passed < size)  # dynamic sampling (DAPO)

    graded_votes = groups.sum(graded_row)
    if ((graded_votes != 0) & (graded_votes != size)).any():
        raise ValueError("The `graded` flag must be the same on every row of a group")
    incomplete = groups.sum(passed & ((tier < 0) | np.isnan(rank))) > 0
    is_graded = mixed & (graded_votes > 0) & ~incomplete
    status_code = np.where(~mixed, 2, np.where(is_graded, 0, 1))

    # No np.where(mixed, ...) needed: in a group with no pass or no fail every reward
    # equals the group's mean, so all three baselines give exactly 0 there already.
    advantage = _baseline_advantage(reward_used, groups, baseline)

    scored = passed & is_graded[group]
    factor = np.ones(len(reward_used))
    scored_group = group[scored]
    scored_factor = _band_factors(scored_group, tier[scored], rank[scored], mapping)
    factor[scored] = scored_factor

    passing_advantage = np.where(passed, advantage, 0.0)
    s_plus = groups.sum(passing_advantage)
    sum_f_a = groups.sum(factor * passing_advantage)
    usable = is_graded & (sum_f_a != 0)
    lam = np.divide(s_plus, sum_f_a, out=np.ones(n_groups), where=usable)

    # Equal factors make lambda * f exactly 1 in real arithmetic; keep A bit for bit.
    # A group's factors are all equal iff none differs from the group's first one.
    first_factor = np.zeros(n_groups)
    first_factor[scored_group[::-1]] = scored_factor[::-1]  # fancy assignment: the last write wins
    differs = np.bincount(scored_group, weights=scored_factor != first_factor[scored_group], minlength=n_groups) > 0
    rescale = scored & differs[group]
    lam_row = lam[group]

    # New columns are built apart and joined once; the input's columns are shared, not
    # copied (pandas copy-on-write keeps the caller's frame unchanged).
    added = pd.DataFrame(
        {
            "reward_used": reward_used,
            "passed": passed,
            "advantage": advantage,
            "factor": factor,
            "lambda": lam_row,
            "redistributed_advantage": np.where(rescale, lam_row * factor * advantage, advantage),
            "discount_only_advantage": factor * advantage,
            # Status as a categorical: codes per group, no million-string array to build.
            "status": pd.Categorical.from_codes(status_code[group], categories=pd.Index([GRADED, FALLBACK, FILTERED])),
        },
        index=rollouts.index,
        copy=False,
    )
    return pd.concat([rollouts.drop(columns=[c for c in OUTPUT_COLUMNS if c in rollouts.columns]), added], axis=1)


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
    group = np.zeros(len(reward), dtype=np.intp)
    return _baseline_advantage(reward, _Groups(group, 1, None), baseline)


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


@dataclass
class _Groups:
    """Integer group codes per row, and per-group sums over them.

    Rows usually arrive with each group's rows together and group ids ascending (the
    store orders them so); then a group is a run of rows and sums are one
    np.add.reduceat. Otherwise the ids are factorized and sums are np.bincount.
    """

    codes: np.ndarray
    count: int
    starts: np.ndarray | None  # first row of each group when groups are runs in code order

    @classmethod
    def of(cls, groups: pd.Series) -> _Groups:
        values = groups.to_numpy()
        if values.dtype.kind in "iu" and len(values):
            change = values[1:] != values[:-1]
            if (values[1:] >= values[:-1]).all():
                codes = np.empty(len(values), dtype=np.intp)
                codes[0] = 0
                np.cumsum(change, out=codes[1:])
                return cls(codes, int(codes[-1]) + 1, np.r_[0, np.flatnonzero(change) + 1])
        codes, uniques = pd.factorize(groups, sort=False)
        if (codes < 0).any():
            raise ValueError("Every rollout needs a group id")
        return cls(codes.astype(np.intp), len(uniques), None)

    @property
    def size(self) -> np.ndarray:
        if self.starts is not None:
            return np.diff(np.r_[self.starts, len(self.codes)])
        return np.bincount(self.codes, minlength=self.count)

    def sum(self, weights: np.ndarray) -> np.ndarray:
        if self.starts is not None:
            return np.add.reduceat(weights, self.starts, dtype=float) if len(weights) else np.zeros(0)
        return np.bincount(self.codes, weights=weights, minlength=self.count)


def _tier_codes(tiers: pd.Series) -> np.ndarray:
    """0/1/2 for T1/T2/T3, -1 where the grader gave no tier.

    A categorical column (what the store hands over) costs nothing to code; any other
    column is factorized.
    """
    if isinstance(tiers.dtype, pd.CategoricalDtype):
        codes = tiers.cat.codes.to_numpy()
        lookup = np.array([_TIER_INDEX.get(c, -2) for c in tiers.cat.categories] + [-1], dtype=np.intp)
        used = np.zeros(len(lookup), dtype=bool)
        used[codes] = True  # code -1 (missing) lands on the trailing slot
        if (used[:-1] & (lookup[:-1] == -2)).any():
            unknown = [c for c, code, u in zip(tiers.cat.categories, lookup, used) if code == -2 and u]
            raise ValueError(f"Unknown tier(s) {sorted(map(str, unknown))}; expected {', '.join(TIERS)}")
        return lookup[codes]
    # factorize hashes each distinct value once; mapping a million strings one by one
    # was the engine's largest cost.
    codes, uniques = pd.factorize(tiers, use_na_sentinel=True)
    lookup = np.array([_TIER_INDEX.get(u, -2) if isinstance(u, str) else -2 for u in uniques] + [-1], dtype=np.intp)
    if (lookup[:-1] == -2).any():
        unknown = [u for u, code in zip(uniques, lookup[:-1]) if code == -2]
        raise ValueError(f"Unknown tier(s) {sorted(map(str, unknown))}; expected {', '.join(TIERS)}")
    return lookup[codes]  # the NA sentinel -1 picks the trailing -1


def _baseline_advantage(reward: np.ndarray, groups: _Groups, baseline: str) -> np.ndarray:
    # Statistics per group, gathered back to rows once.
    group, size = groups.codes, groups.size
    total = groups.sum(reward)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / size
    if baseline == "mean":
        centred: np.ndarray = reward - mean[group]
        return centred
    n = size[group].astype(float)
    # A group of one has no "others" and no spread; 0 is its only signal-free value.
    others = np.maximum(n - 1.0, 1.0)
    if baseline == "loo":
        return np.where(n > 1, reward - (total[group] - reward) / others, 0.0)
    centred = reward - mean[group]
    # ddof=1 as verl and TRL do; epsilon keeps all-equal groups finite.
    std = np.sqrt(groups.sum(centred**2)[group] / others)
    return np.where(n > 1, centred / (std + GRPO_EPSILON), 0.0)


def _band_factors(group: np.ndarray, tier: np.ndarray, rank: np.ndarray, mapping: MappingSpec) -> np.ndarray:
    """docs/method.md section 3: position j of a rank among the k distinct ranks of its tier."""
    n = len(group)
    if n == 0:
        return np.empty(0)
    band = group.astype(np.int64) * 3 + tier  # one id per (group, tier)
    if np.array_equal(rank, np.floor(rank)) and rank.min() >= 1 and rank.max() <= 64:
        j, k = _band_positions_table(band, rank.astype(np.intp) - 1)
    else:
        j, k = _band_positions_sorted(band, rank)
    hi = np.array([mapping.band(x)[0] for x in TIERS])[tier]
    lo = np.array([mapping.band(x)[1] for x in TIERS])[tier]
    values: np.ndarray = np.where(k > 1, hi - (hi - lo) * j / np.maximum(k - 1.0, 1.0), hi)
    return values


def _band_positions_table(band: np.ndarray, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..64 (slot = rank - 1): a bands x ranks table of which ranks occur, no sort.

    Its running count along each band's row is the number of distinct ranks up to a
    rank; so j = count at the rank - 1 and k = count at the row's end.
    """
    bands, band_code = np.unique(band, return_inverse=True) if band.max() > 4 * len(band) else (None, band)
    n_bands = len(bands) if bands is not None else int(band.max()) + 1
    present = np.zeros((n_bands, int(slot.max()) + 1), dtype=np.int8)
    present[band_code, slot] = 1
    upto = present.cumsum(axis=1, dtype=np.int8)
    return upto[band_code, slot] - 1.0, upto[band_code, -1].astype(float)


def _band_positions_sorted(band: np.ndarray, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Any ranks: one sort by (band, rank); a new rank inside a run of a band advances j."""
    n = len(band)
    order = np.lexsort((rank, band))
    b, r = band[order], rank[order]
    starts_band = np.empty(n, dtype=bool)
    starts_band[0] = True
    np.not_equal(b[1:], b[:-1], out=starts_band[1:])
    new_rank = starts_band.copy()
    new_rank[1:] |= r[1:] != r[:-1]
    distinct = np.cumsum(new_rank)  # running count of distinct (band, rank)
    run = np.cumsum(starts_band) - 1
    first = distinct[starts_band]
    last = distinct[np.r_[np.flatnonzero(starts_band)[1:] - 1, n - 1]]
    j, k = np.empty(n), np.empty(n)
    j[order] = distinct - first[run]
    k[order] = (last - first + 1)[run]
    return j, k
