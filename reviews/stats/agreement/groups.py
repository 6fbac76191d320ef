"""Per-group sufficient statistics of the long frame (see frame.py). Pure: stdlib, NumPy, pandas.

Every figure is a function of sums over groups of a few counts per group, so the
frame is reduced once to a groups x STATISTICS matrix and a bootstrap resample is a
count-weighted sum of its rows: all resamples together are one matrix product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from grading.method.tiers import TIERS
from reviews.stats.agreement.frame import GRADER, _check_columns, tier_codes

_CELLS = tuple(f"{g}_{h}" for g in TIERS for h in TIERS)
STATISTICS = (
    *(f"confusion_{c}" for c in _CELLS),  # grader tier x human consensus tier, counts
    *(f"coincidence_{c}" for c in _CELLS),  # Krippendorff coincidences over all raters
    "pairable",  # rollouts two or more raters tiered
    "tau_sum",
    "tau_groups",  # τ-b summed over the groups where it is defined; their number
    "pair_hits",
    "pairs",  # pairs people ordered strictly; those the grader ordered the same way
    "top1_hits",
    "top1_groups",
    "cheat_tp",
    "cheat_fp",
    "cheat_fn",
    "cheat_compared",
)
_COL = {name: i for i, name in enumerate(STATISTICS)}


@dataclass(frozen=True)
class GroupStatistics:
    """One row of STATISTICS per group, in the order groups first appear in the frame."""

    groups: pd.Index
    table: np.ndarray  # n_groups x len(STATISTICS), float64
    taus: np.ndarray  # τ-b per group, NaN where undefined
    ranked: np.ndarray  # bool per group: some rollout has grader and consensus ranks

    def __len__(self) -> int:
        return len(self.groups)

    def column(self, name: str) -> np.ndarray:
        return self.table[:, _COL[name]]


def _runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, sizes) of the runs of equal values in a sorted array."""
    if len(sorted_keys) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    return starts, np.diff(np.r_[starts, len(sorted_keys)])


def _position_within(owner: np.ndarray) -> np.ndarray:
    """For items listed in order of appearance, each one's position among its owner's: 0, 1, ..."""
    order = np.argsort(owner, kind="stable")
    starts, sizes = _runs(owner[order])
    position = np.empty(len(owner), dtype=np.int64)
    position[order] = np.arange(len(order)) - np.repeat(starts, sizes)
    return position


def _pairs_within_runs(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (i, j), i < j, of every pair inside the same run of a sorted array."""
    n = len(sorted_keys)
    starts, sizes = _runs(sorted_keys)
    after = np.repeat(starts + sizes, sizes) - np.arange(n) - 1  # partners after each position
    i = np.repeat(np.arange(n), after)
    block_start = np.repeat(np.cumsum(after) - after, after)
    return i, i + 1 + (np.arange(len(i)) - block_start)


def _per_group(group: np.ndarray, weights: np.ndarray | None, n_groups: int) -> np.ndarray:
    return np.bincount(group, weights=weights, minlength=n_groups).astype(np.float64)


def _flags(column: pd.Series) -> np.ndarray:
    """1.0 / 0.0 / NaN from booleans with gaps (None, NaN, pandas NA)."""
    values = column.to_numpy(dtype=object) if column.dtype == object else column
    if column.dtype != object or pd.api.types.infer_dtype(values, skipna=True) in ("boolean", "empty"):
        try:
            # pandas-stubs' pd.array takes no Series; pandas does
            flags: np.ndarray = pd.array(values, dtype="boolean").to_numpy(dtype=np.float64, na_value=np.nan)  # type: ignore[call-overload]
            return flags
        except (TypeError, ValueError):
            pass
    bad = [v for v in column.dropna().tolist() if not isinstance(v, (bool, np.bool_))]
    raise ValueError(f"{column.name} must be true, false or empty; got {bad[0] if bad else column.dtype!r}")


def _first_per_unit(unit: np.ndarray, values: np.ndarray, n_units: int) -> np.ndarray:
    """Per unit, the first non-missing value in frame order (NaN when none)."""
    out = np.full(n_units, np.nan)
    present = ~np.isnan(values)
    units, first = np.unique(unit[present], return_index=True)
    out[units] = values[present][first]
    return out


def group_statistics(frame: pd.DataFrame, *, grader: str = GRADER) -> GroupStatistics:
    """Reduce the long frame to per-group counts (see STATISTICS), without a per-group loop."""
    _check_columns(frame)
    group, groups = pd.factorize(frame["group"], sort=False)
    rollout, rollouts = pd.factorize(frame["rollout"], sort=False)
    rater, raters = pd.factorize(frame["rater"], sort=False)
    n_groups, n_raters = len(groups), len(raters)
    unit, unit_keys = pd.factorize(group.astype(np.int64) * len(rollouts) + rollout, sort=False)
    n_units = len(unit_keys)
    unit_group = (unit_keys // max(len(rollouts), 1)).astype(np.int64)
    if pd.Series(unit.astype(np.int64) * n_raters + rater).duplicated().any():
        raise ValueError("a rater judged the same rollout twice; keep one row per (group, rollout, rater)")
    tier = tier_codes(frame["tier"].to_numpy(dtype=object))
    rank = pd.to_numeric(frame["rank"], errors="raise").to_numpy(dtype=np.float64)
    is_grader = (raters == grader)[rater] if n_raters else np.zeros(len(frame), dtype=bool)
    person = ~is_grader

    # per rollout: the grader's tier and rank, the people's consensus tier and rank
    grader_tier = np.full(n_units, np.nan)
    grader_rank = np.full(n_units, np.nan)
    grader_tier[unit[is_grader]] = tier[is_grader]
    grader_rank[unit[is_grader]] = rank[is_grader]
    tiered = person & ~np.isnan(tier)
    counts = np.bincount(unit[tiered] * 3 + tier[tiered].astype(np.int64) - 1, minlength=3 * n_units)
    counts = counts.reshape(n_units, 3)
    k = counts.sum(axis=1)
    below2 = counts[:, 0] + counts[:, 1]

    def nth_tier(position: np.ndarray) -> np.ndarray:  # the position-th smallest tier given
        return 1.0 + (position >= counts[:, 0]) + (position >= below2)

    middle = (nth_tier((k - 1) // 2) + nth_tier(k // 2)) / 2.0
    human_tier = np.where(k > 0, np.ceil(middle), np.nan)  # half-way -> the worse tier
    ranked_row = person & ~np.isnan(rank)
    rank_count = np.bincount(unit[ranked_row], minlength=n_units)
    rank_sum = np.bincount(unit[ranked_row], weights=rank[ranked_row], minlength=n_units)
    with np.errstate(invalid="ignore", divide="ignore"):
        human_rank = np.where(rank_count > 0, rank_sum / rank_count, np.nan)

    table = np.zeros((n_groups, len(STATISTICS)))

    # confusion of grader tier vs consensus
    compared = ~np.isnan(grader_tier) & ~np.isnan(human_tier)
    cell = (grader_tier[compared].astype(np.int64) - 1) * 3 + human_tier[compared].astype(np.int64) - 1
    table[:, 0:9] = np.bincount(unit_group[compared] * 9 + cell, minlength=9 * n_groups).reshape(n_groups, 9)

    # Krippendorff coincidences, all raters: each rollout adds n_c (n_k - [c = k]) / (m - 1)
    valid = ~np.isnan(tier)
    all_counts = np.bincount(unit[valid] * 3 + tier[valid].astype(np.int64) - 1, minlength=3 * n_units)
    all_counts = all_counts.reshape(n_units, 3).astype(np.float64)
    m = all_counts.sum(axis=1)
    pairable = m >= 2
    scaled = all_counts[pairable] / (m[pairable] - 1)[:, None]
    coincidence = scaled[:, :, None] * all_counts[pairable][:, None, :] - scaled[:, :, None] * np.eye(3)
    coincidence = coincidence.reshape(-1, 9)
    for c in range(9):
        table[:, 9 + c] = _per_group(unit_group[pairable], coincidence[:, c], n_groups)
    table[:, _COL["pairable"]] = _per_group(unit_group[pairable], None, n_groups)

    taus, ranked = _rank_agreement(
        table, compared & ~np.isnan(grader_rank) & ~np.isnan(human_rank), unit_group, grader_rank, human_rank
    )
    table[:, [_COL["pair_hits"], _COL["pairs"]]] = _pairwise(
        group=group,
        unit=unit,
        unit_group=unit_group,
        rater=rater,
        rank=rank,
        is_grader=is_grader,
        grader_rank=grader_rank,
        n_groups=n_groups,
        n_raters=n_raters,
    )

    if "cheat" in frame.columns:
        _cheat_counts(table, frame, unit, unit_group, is_grader)

    return GroupStatistics(groups=pd.Index(groups), table=table, taus=taus, ranked=ranked)


def _rank_agreement(
    table: np.ndarray, both_ranked: np.ndarray, unit_group: np.ndarray, grader_rank: np.ndarray, human_rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Fill τ-b and top-1 columns from the rollouts with grader and consensus ranks; return
    (τ-b per group, whether the group had any such rollout)."""
    n_groups = len(table)
    both_ranked = np.flatnonzero(both_ranked)
    both_ranked = both_ranked[np.argsort(unit_group[both_ranked], kind="stable")]
    run_group = unit_group[both_ranked]
    g_rank, h_rank = grader_rank[both_ranked], human_rank[both_ranked]
    i, j = _pairs_within_runs(run_group)
    sa, sb = np.sign(g_rank[i] - g_rank[j]), np.sign(h_rank[i] - h_rank[j])
    pair_group = run_group[i]
    concordance = _per_group(pair_group, sa * sb, n_groups)
    denominator = np.sqrt(_per_group(pair_group, sa * sa, n_groups) * _per_group(pair_group, sb * sb, n_groups))
    with np.errstate(invalid="ignore", divide="ignore"):
        taus = np.where(denominator > 0, concordance / denominator, np.nan)
    defined = ~np.isnan(taus)
    table[:, _COL["tau_sum"]] = np.where(defined, taus, 0.0)
    table[:, _COL["tau_groups"]] = defined

    starts, _ = _runs(run_group)
    best_grader = np.full(n_groups, np.nan)
    best_human = np.full(n_groups, np.nan)
    if len(starts):
        best_grader[run_group[starts]] = np.minimum.reduceat(g_rank, starts)
        best_human[run_group[starts]] = np.minimum.reduceat(h_rank, starts)
    both_best = (g_rank == best_grader[run_group]) & np.isclose(h_rank, best_human[run_group])
    ranked = _per_group(run_group, None, n_groups) > 0
    table[:, _COL["top1_hits"]] = _per_group(run_group, both_best, n_groups) > 0
    table[:, _COL["top1_groups"]] = ranked
    return taus, ranked


def _cheat_counts(
    table: np.ndarray, frame: pd.DataFrame, unit: np.ndarray, unit_group: np.ndarray, is_grader: np.ndarray
) -> None:
    """Fill the cheat columns: the grader's flags against audits, or the people's calls."""
    n_groups, n_units = len(table), len(unit_group)
    cheat = _flags(frame["cheat"])
    flagged = np.full(n_units, np.nan)
    flagged[unit[is_grader]] = cheat[is_grader]
    if "audit" in frame.columns:
        reference = _first_per_unit(unit, _flags(frame["audit"]), n_units)
    else:
        called = ~is_grader & ~np.isnan(cheat)
        calls = np.bincount(unit[called], minlength=n_units)
        votes = np.bincount(unit[called], weights=cheat[called], minlength=n_units)
        with np.errstate(invalid="ignore", divide="ignore"):
            reference = np.where(calls > 0, (votes / calls >= 0.5).astype(np.float64), np.nan)
    both = ~np.isnan(flagged) & ~np.isnan(reference)
    f, r, g = flagged[both] == 1, reference[both] == 1, unit_group[both]
    table[:, _COL["cheat_tp"]] = _per_group(g, f & r, n_groups)
    table[:, _COL["cheat_fp"]] = _per_group(g, f & ~r, n_groups)
    table[:, _COL["cheat_fn"]] = _per_group(g, ~f & r, n_groups)
    table[:, _COL["cheat_compared"]] = _per_group(g, None, n_groups)


def _pairwise(
    *,
    group: np.ndarray,
    unit: np.ndarray,
    unit_group: np.ndarray,
    rater: np.ndarray,
    rank: np.ndarray,
    is_grader: np.ndarray,
    grader_rank: np.ndarray,
    n_groups: int,
    n_raters: int,
) -> np.ndarray:
    """Per group: (pairs the grader ordered like people, pairs people ordered strictly)."""
    out = np.zeros((n_groups, 2))
    ranked = ~np.isnan(rank)
    eligible = np.zeros(n_groups, dtype=bool)  # the grader ranked something in the group
    eligible[group[ranked & is_grader]] = True
    # each person gets a column (slot) within each group: 0, 1, ... in order of appearance
    people_rows = np.flatnonzero(ranked & ~is_grader & eligible[group])
    person, person_keys = pd.factorize(group[people_rows].astype(np.int64) * n_raters + rater[people_rows], sort=False)
    slot = _position_within(person_keys // max(n_raters, 1))
    n_slots = int(slot.max()) + 1 if len(slot) else 0

    units = np.unique(unit[ranked & eligible[group]])
    units = units[np.argsort(unit_group[units], kind="stable")]
    local = np.full(len(unit_group), -1)
    local[units] = np.arange(len(units))
    people_ranks = np.full((len(units), n_slots), np.nan)
    people_ranks[local[unit[people_rows]], slot[person]] = rank[people_rows]
    machine = grader_rank[units]

    i, j = _pairs_within_runs(unit_group[units])
    with np.errstate(invalid="ignore"):
        signs = np.sign(people_ranks[i] - people_ranks[j])
    judged = ~np.isnan(signs)
    positive = np.where(judged, signs > 0, True).all(axis=1)
    negative = np.where(judged, signs < 0, True).all(axis=1)
    strict = judged.any(axis=1) & (positive | negative)
    human_sign = np.where(positive, 1.0, -1.0)
    hit = strict & (np.sign(machine[i] - machine[j]) == human_sign)
    pair_group = unit_group[units][i]
    out[:, 0] = _per_group(pair_group, hit, n_groups)
    out[:, 1] = _per_group(pair_group, strict, n_groups)
    return out
