"""How far the grader agrees with people (docs/method.md section 5). Pure: stdlib, NumPy, pandas.

Tiers are ordinal codes 1, 2, 3 for T1 (best), T2, T3; "T1".."T3" strings are accepted
everywhere. Array functions take plain lists / NumPy arrays; the group-level figures
take one long pandas frame, one row per (rollout, rater):

    group    rollout  rater      tier  rank  [cheat]  [audit]
    "g1"     0        "grader"   "T1"  1     False
    "g1"     0        "bob"      "T2"  2     False
    ...

`rater == GRADER` ("grader") marks the grader's rows; every other rater is a person.
The human consensus of a rollout is the median of the people's tiers, a half-way median
(two people, one tier apart) rounded to the worse tier; its consensus rank is the mean
of the people's ranks (1 = best, ties allowed). `cheat` (optional) is each rater's cheat
call; `audit` (optional, per rollout, empty = not audited) is the audited decision the
grader's flags are scored against. Without an `audit` column the reference is the
people's cheat calls (half of them or more saying cheat counts as cheat).

Worked example: one group of three, the grader and one person (bob).

>>> import pandas as pd
>>> frame = pd.DataFrame({
...     "group": ["g"] * 6,
...     "rollout": [0, 1, 2] * 2,
...     "rater": ["grader"] * 3 + ["bob"] * 3,
...     "tier": ["T1", "T2", "T3", "T1", "T3", "T3"],
...     "rank": [1, 2, 3, 1, 3, 2],
... })
>>> table = consensus_table(frame)
>>> table[["rollout", "grader_tier", "human_tier"]].values.tolist()
[[0, 1, 1], [1, 2, 3], [2, 3, 3]]
>>> exact_agreement(table.grader_tier, table.human_tier)
0.6666666666666666
>>> round(quadratic_kappa(table.grader_tier, table.human_tier), 6)
0.8
>>> confusion_matrix(table.grader_tier, table.human_tier).tolist()
[[1, 0, 0], [0, 0, 1], [0, 0, 1]]
>>> round(kendall_tau_b([1, 2, 3], [1, 3, 2]), 6)
0.333333
>>> mean_group_tau(frame), pairwise_accuracy(frame), top1_agreement(frame)
(0.3333333333333333, 0.6666666666666666, 1.0)
>>> cheat_scores([True, True, False], [True, False, False])
{'precision': 0.5, 'recall': 1.0, 'f1': 0.6666666666666666}

Every figure gets a 95 % interval by resampling groups:

>>> est, low, high = bootstrap_ci(lambda gs: sum(gs) / len(gs), [0.5, 0.7, 0.9], n_boot=500, seed=1)
>>> round(est, 6), 0.5 <= low <= est <= high <= 0.9
(0.7, True)

The page and the API ask for everything at once. `agreement_report` reduces each group
to a row of counts once, so a resample is a weighted sum of rows and all resamples are
one matrix product. A second group h, which bob and dan both judged, with cheat calls:

>>> h = pd.DataFrame({
...     "group": ["h"] * 9,
...     "rollout": [0, 1, 2] * 3,
...     "rater": ["grader"] * 3 + ["bob"] * 3 + ["dan"] * 3,
...     "tier": ["T2", "T2", "T1", "T2", "T3", "T1", "T2", "T2", "T1"],
...     "rank": [2, 3, 1, 2, 3, 1, 2, 3, 1],
...     "cheat": [False, True, False, False, True, False, False, False, False],
... })
>>> both = pd.concat([frame.assign(cheat=False), h])
>>> report = agreement_report(both, n_boot=200, seed=0)
>>> kappa = report["kappa"]
>>> round(kappa.value, 6), kappa.n, kappa.lo <= kappa.value <= kappa.hi
(0.76, 6, True)
>>> report["tau"].n, report["top1"].value, report["cheat_recall"].value
(2, 1.0, 1.0)
>>> report["confusion_T2_T3"]  # of the rollouts the grader called T2, the share people called T3
Figure(value=0.6666666666666666, lo=0.5, hi=1.0, n=3)

The ceiling: the same figures between the first two people of each group both judged
(here only h; the second person, dan, plays the grader's part):

>>> ceiling = ceiling_report(both, n_boot=200, seed=0)
>>> ceiling["exact_agreement"].value, ceiling["tau"].value, ceiling["cheat_precision"].n
(0.6666666666666666, 1.0, 0)

Edge cases, decided here once: a figure with nothing to measure (no pairs people
ordered, κ when both sides use one tier, τ-b when one side is all ties) is NaN, and
NaN resamples are left out of an interval. A grader tie on a pair people ordered
strictly counts as a miss. A rater judges a rollout at most once (a second row is an
error, not a silent pick).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

GRADER = "grader"
TIERS = ("T1", "T2", "T3")
LEVELS = (1, 2, 3)
_CODES = {"T1": 1, "T2": 2, "T3": 3, 1: 1, 2: 2, 3: 3}
_STRING_CODES = {"T1": 1.0, "T2": 2.0, "T3": 3.0}
FRAME_COLUMNS = ("group", "rollout", "rater", "tier", "rank")


def tier_codes(tiers: Any) -> np.ndarray:
    """1, 2, 3 for T1, T2, T3; missing (None/NaN) becomes NaN."""
    values = np.asarray(tiers, dtype=object)
    flat = values.ravel()
    kind = pd.api.types.infer_dtype(flat, skipna=True)
    # Fast paths for the two shapes a frame really has; anything else (and any bad
    # value) goes through the loop, which names the offending value.
    if kind == "string":
        codes = pd.Series(flat, dtype=object).map(_STRING_CODES).to_numpy(dtype=np.float64)
        if not (np.isnan(codes) & pd.notna(flat)).any():
            return codes.reshape(values.shape)
    elif kind in ("integer", "floating", "mixed-integer-float"):
        codes = flat.astype(np.float64)
        if np.isin(codes[~np.isnan(codes)], LEVELS).all():
            return codes.reshape(values.shape)
    out = []
    for t in flat.tolist():
        if t is None or (isinstance(t, float) and np.isnan(t)):
            out.append(np.nan)
            continue
        if isinstance(t, float) and t.is_integer():
            t = int(t)
        if isinstance(t, bool) or t not in _CODES:
            raise ValueError(f"Unknown tier {t!r}; expected one of {', '.join(TIERS)} or 1..3")
        out.append(_CODES[t])
    return np.asarray(out, dtype=np.float64).reshape(values.shape)


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


# --- the long frame ---------------------------------------------------------------------


def _check_columns(frame: pd.DataFrame) -> None:
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks columns {missing}; expected {', '.join(FRAME_COLUMNS)}")
    if frame[["group", "rollout", "rater"]].isna().to_numpy().any():
        raise ValueError("every row needs a group, a rollout and a rater")


def _checked_frame(frame: pd.DataFrame) -> pd.DataFrame:
    _check_columns(frame)
    if frame.duplicated(["group", "rollout", "rater"]).any():
        raise ValueError("a rater judged the same rollout twice; keep one row per (group, rollout, rater)")
    out = frame.copy()
    out["tier"] = tier_codes(out["tier"].to_numpy(dtype=object))
    out["rank"] = pd.to_numeric(out["rank"], errors="raise").astype(np.float64)
    return out


def consensus_table(frame: pd.DataFrame, *, grader: str = GRADER) -> pd.DataFrame:
    """One row per rollout the grader and at least one person judged.

    Columns: group, rollout, grader_tier, human_tier, grader_rank, human_rank, n_people.
    """
    data = _checked_frame(frame)
    is_grader = data["rater"] == grader
    machine = data[is_grader].groupby(["group", "rollout"], sort=False)[["tier", "rank"]].first()
    people = data[~is_grader].groupby(["group", "rollout"], sort=False).agg(
        human_tier=("tier", "median"), human_rank=("rank", "mean"), n_people=("rater", "nunique")
    )
    people["human_tier"] = np.ceil(people["human_tier"])  # half-way -> the worse tier
    table = machine.rename(columns={"tier": "grader_tier", "rank": "grader_rank"}).join(people, how="inner")
    table = table.dropna(subset=["grader_tier", "human_tier"]).reset_index()
    for column in ("grader_tier", "human_tier"):
        table[column] = table[column].astype(np.int64)
    return table[["group", "rollout", "grader_tier", "human_tier", "grader_rank", "human_rank", "n_people"]]


def reliability_matrix(frame: pd.DataFrame) -> np.ndarray:
    """Units (group, rollout) x raters matrix of tier codes, NaN where a rater did not judge."""
    data = _checked_frame(frame)
    wide = data.pivot_table(index=["group", "rollout"], columns="rater", values="tier", aggfunc="first")
    return wide.to_numpy(dtype=np.float64)


# --- per-group sufficient statistics ----------------------------------------------------
#
# Every figure is a function of sums over groups of a few counts per group, so the
# frame is reduced once to a groups x STATISTICS matrix and a bootstrap resample is a
# count-weighted sum of its rows: all resamples together are one matrix product.

_CELLS = tuple(f"{g}_{h}" for g in TIERS for h in TIERS)
STATISTICS = (
    *(f"confusion_{c}" for c in _CELLS),  # grader tier x human consensus tier, counts
    *(f"coincidence_{c}" for c in _CELLS),  # Krippendorff coincidences over all raters
    "pairable",  # rollouts two or more raters tiered
    "tau_sum", "tau_groups",  # τ-b summed over the groups where it is defined; their number
    "pair_hits", "pairs",  # pairs people ordered strictly; those the grader ordered the same way
    "top1_hits", "top1_groups",
    "cheat_tp", "cheat_fp", "cheat_fn", "cheat_compared",
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
            return pd.array(values, dtype="boolean").to_numpy(dtype=np.float64, na_value=np.nan)
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
        group=group, unit=unit, unit_group=unit_group, rater=rater, rank=rank,
        is_grader=is_grader, grader_rank=grader_rank, n_groups=n_groups, n_raters=n_raters,
    )

    if "cheat" in frame.columns:
        _cheat_counts(table, frame, unit, unit_group, is_grader)

    return GroupStatistics(groups=pd.Index(groups), table=table, taus=taus, ranked=ranked)


def _rank_agreement(table, both_ranked, unit_group, grader_rank, human_rank) -> tuple[np.ndarray, np.ndarray]:
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


def _cheat_counts(table, frame, unit, unit_group, is_grader) -> None:
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


def _pairwise(*, group, unit, unit_group, rater, rank, is_grader, grader_rank, n_groups, n_raters) -> np.ndarray:
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


# --- figures from summed statistics -----------------------------------------------------

FIGURES = (
    "exact_agreement", "kappa", "alpha", "tau", "pairwise_accuracy", "top1",
    "cheat_precision", "cheat_recall", "cheat_f1",
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
    return stats.taus[stats.ranked]


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
    return stats.column("top1_hits")[stats.ranked]


def top1_agreement(frame: pd.DataFrame, *, grader: str = GRADER) -> float:
    return _point(frame, grader, "top1")


# --- reports: every figure with its interval --------------------------------------------


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
        block = draws[start:start + chunk]
        rows = len(block)
        offsets = (np.arange(rows) * n_groups)[:, None]
        weights = np.bincount((block + offsets).ravel(), minlength=rows * n_groups).reshape(rows, n_groups)
        sums[start:start + rows] = weights.astype(np.float64) @ stats.table
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
        value, n = float(point[name][0][0]), int(round(point[name][1][0]))
        low = high = float("nan")
        if boot is not None:
            values = boot[name][0]
            values = values[~np.isnan(values)]
            if len(values):
                low, high = (float(x) for x in np.quantile(values, [tail, 1.0 - tail]))
        report[name] = Figure(value, low, high, n)
    return report


def agreement_report(
    frame: pd.DataFrame, *, grader: str = GRADER, n_boot: int = 1000, seed: int | np.random.Generator | None = 0,
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
    frame: pd.DataFrame, *, grader: str = GRADER, n_boot: int = 1000, seed: int | np.random.Generator | None = 0,
    level: float = 0.95,
) -> dict[str, Figure]:
    """People against people on the groups two people judged: the same figures as
    `agreement_report`, the second person in the grader's place and the first as "the
    people" (κ, α, τ, exact agreement, top-1 and F1 do not depend on which is which;
    pairwise accuracy counts the pairs the first ordered strictly, and precision and
    recall swap). Cheat calls are scored against the first person's, not against audits.
    Intervals resample the overlap groups."""
    return agreement_report(ceiling_frame(frame, grader=grader), grader="second", n_boot=n_boot, seed=seed, level=level)


# --- intervals --------------------------------------------------------------------------


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
