"""The long frame the agreement figures take, and tier codes. Pure: stdlib, NumPy, pandas.

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

A rater judges a rollout at most once (a second row is an error, not a silent pick).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from grading.method.tiers import LEVELS, TIER_LEVEL, unknown_tier

GRADER = "grader"
_CODES: dict[str | int, int] = dict([*TIER_LEVEL.items(), *((level, level) for level in LEVELS)])
_STRING_CODES = {tier: float(level) for tier, level in TIER_LEVEL.items()}
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
            raise unknown_tier(t)
        out.append(_CODES[t])
    return np.asarray(out, dtype=np.float64).reshape(values.shape)


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
    people = (
        data[~is_grader]
        .groupby(["group", "rollout"], sort=False)
        .agg(human_tier=("tier", "median"), human_rank=("rank", "mean"), n_people=("rater", "nunique"))
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
