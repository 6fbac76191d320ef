"""How far the grader agrees with people (METHOD.md section 5). Pure: stdlib, NumPy, pandas.

Tiers are ordinal codes 1, 2, 3 for T1 (best), T2, T3; "T1".."T3" strings are accepted
everywhere. Array functions take plain lists / NumPy arrays; the group-level figures
take one long pandas frame, one row per (rollout, rater):

    group    rollout  rater      tier  rank  [cheat]
    "g1"     0        "grader"   "T1"  1
    "g1"     0        "bob"      "T2"  2
    ...

`rater == GRADER` ("grader") marks the grader's rows; every other rater is a person.
The human consensus of a rollout is the median of the people's tiers, a half-way median
(two people, one tier apart) rounded to the worse tier; its consensus rank is the mean
of the people's ranks (1 = best, ties allowed).

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

Edge cases, decided here once: a figure with nothing to measure (no pairs people
ordered, κ when both sides use one tier, τ-b when one side is all ties) is NaN, and
NaN resamples are left out of an interval. A grader tie on a pair people ordered
strictly counts as a miss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

GRADER = "grader"
TIERS = ("T1", "T2", "T3")
LEVELS = (1, 2, 3)
_CODES = {"T1": 1, "T2": 2, "T3": 3, 1: 1, 2: 2, 3: 3}
FRAME_COLUMNS = ("group", "rollout", "rater", "tier", "rank")


def tier_codes(tiers: Any) -> np.ndarray:
    """1, 2, 3 for T1, T2, T3; missing (None/NaN) becomes NaN."""
    out = []
    for t in np.asarray(tiers, dtype=object).ravel().tolist():
        if t is None or (isinstance(t, float) and np.isnan(t)):
            out.append(np.nan)
            continue
        if isinstance(t, float) and t.is_integer():
            t = int(t)
        if isinstance(t, bool) or t not in _CODES:
            raise ValueError(f"Unknown tier {t!r}; expected one of {', '.join(TIERS)} or 1..3")
        out.append(_CODES[t])
    return np.asarray(out, dtype=np.float64).reshape(np.shape(tiers))


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
    observed = confusion_matrix(grader, human).astype(np.float64)
    n = observed.sum()
    if n == 0:
        return float("nan")
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    idx = np.arange(3)
    weights = (idx[:, None] - idx[None, :]) ** 2
    denominator = float((weights * expected).sum())
    if denominator == 0:
        return float("nan")
    return float(1.0 - (weights * observed).sum() / denominator)


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


def _checked_frame(frame: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks columns {missing}; expected {', '.join(FRAME_COLUMNS)}")
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


def _per_group(table: pd.DataFrame, fn: Callable[[pd.DataFrame], float]) -> np.ndarray:
    return np.array([fn(g) for _, g in table.groupby("group", sort=False)], dtype=np.float64)


def group_taus(frame: pd.DataFrame, *, grader: str = GRADER) -> np.ndarray:
    """τ-b between the grader's ranks and the people's consensus ranks, one per group."""
    table = consensus_table(frame, grader=grader).dropna(subset=["grader_rank", "human_rank"])
    return _per_group(table, lambda g: kendall_tau_b(g["grader_rank"], g["human_rank"]))


def mean_group_tau(frame: pd.DataFrame, *, grader: str = GRADER) -> float:
    """Mean over groups of τ-b (groups where τ-b is undefined are left out)."""
    taus = group_taus(frame, grader=grader)
    taus = taus[~np.isnan(taus)]
    return float(taus.mean()) if len(taus) else float("nan")


def pairwise_counts(frame: pd.DataFrame, *, grader: str = GRADER) -> tuple[int, int]:
    """(pairs the grader ordered like people, pairs people ordered strictly).

    A pair counts when every person who ranked both rollouts ordered them the same way
    strictly; the grader agrees when it orders them the same way strictly.
    """
    data = _checked_frame(frame).dropna(subset=["rank"])
    hits = total = 0
    for _, group in data.groupby("group", sort=False):
        wide = group.pivot_table(index="rollout", columns="rater", values="rank", aggfunc="first")
        if grader not in wide.columns:
            continue
        machine = wide[grader].to_numpy()
        people = wide.drop(columns=grader).to_numpy().T  # raters x rollouts
        iu = np.triu_indices(len(machine), k=1)
        with np.errstate(invalid="ignore"):
            signs = np.sign(people[:, :, None] - people[:, None, :])[:, iu[0], iu[1]]
        judged = ~np.isnan(signs)
        positive = np.where(judged, signs > 0, True).all(axis=0)
        negative = np.where(judged, signs < 0, True).all(axis=0)
        strict = judged.any(axis=0) & (positive | negative)
        human_sign = np.where(positive, 1.0, -1.0)
        machine_sign = np.sign(machine[:, None] - machine[None, :])[iu]
        total += int(strict.sum())
        hits += int((strict & (machine_sign == human_sign)).sum())
    return hits, total


def pairwise_accuracy(frame: pd.DataFrame, *, grader: str = GRADER) -> float:
    hits, total = pairwise_counts(frame, grader=grader)
    return hits / total if total else float("nan")


def top1_hits(frame: pd.DataFrame, *, grader: str = GRADER) -> np.ndarray:
    """Per group: 1.0 when a rollout the grader ranked best is among the people's best."""
    table = consensus_table(frame, grader=grader).dropna(subset=["grader_rank", "human_rank"])

    def hit(g: pd.DataFrame) -> float:
        machine_best = g["grader_rank"] == g["grader_rank"].min()
        human_best = np.isclose(g["human_rank"], g["human_rank"].min())
        return float((machine_best & human_best).any())

    return _per_group(table, hit)


def top1_agreement(frame: pd.DataFrame, *, grader: str = GRADER) -> float:
    hits = top1_hits(frame, grader=grader)
    return float(hits.mean()) if len(hits) else float("nan")


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
