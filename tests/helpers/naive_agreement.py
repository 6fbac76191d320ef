"""The straightforward way to the frame-level figures: one group at a time, every
bootstrap resample rebuilt as a frame and measured again. The tests hold
`reviews.stats.agreement`'s vectorised path equal to this; `benchmarks/agreement.py` times it.
(The per-group loops are the ones `reviews.stats.agreement` had before it was vectorised.)"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grading.method.tiers import TIERS
from reviews.stats.agreement.figures import (
    FIGURES,
    cheat_scores,
    confusion_matrix,
    exact_agreement,
    kendall_tau_b,
    krippendorff_alpha,
    quadratic_kappa,
)
from reviews.stats.agreement.frame import GRADER, _checked_frame, consensus_table, reliability_matrix


def _per_group(table: pd.DataFrame, fn) -> np.ndarray:
    return np.array([fn(g) for _, g in table.groupby("group", sort=False)], dtype=np.float64)


def group_taus(frame: pd.DataFrame, *, grader: str = GRADER) -> dict:
    table = consensus_table(frame, grader=grader).dropna(subset=["grader_rank", "human_rank"])
    return {name: kendall_tau_b(g["grader_rank"], g["human_rank"]) for name, g in table.groupby("group", sort=False)}


def mean_group_tau(frame: pd.DataFrame, *, grader: str = GRADER) -> float:
    taus = np.array(list(group_taus(frame, grader=grader).values()), dtype=np.float64)
    taus = taus[~np.isnan(taus)]
    return float(taus.mean()) if len(taus) else float("nan")


def pairwise_counts(frame: pd.DataFrame, *, grader: str = GRADER) -> tuple[int, int]:
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


def top1_hits(frame: pd.DataFrame, *, grader: str = GRADER) -> dict:
    table = consensus_table(frame, grader=grader).dropna(subset=["grader_rank", "human_rank"])

    def hit(g: pd.DataFrame) -> float:
        machine_best = g["grader_rank"] == g["grader_rank"].min()
        human_best = np.isclose(g["human_rank"], g["human_rank"].min())
        return float((machine_best & human_best).any())

    return {name: hit(g) for name, g in table.groupby("group", sort=False)}


def cheat_pairs(frame: pd.DataFrame, *, grader: str = GRADER) -> tuple[list[bool], list[bool]]:
    """(grader flags, reference) over the rollouts that have both, one rollout at a time."""
    flagged, reference = [], []
    if "cheat" not in frame.columns:
        return flagged, reference
    for _, unit in frame.groupby(["group", "rollout"], sort=False):
        mine = unit.loc[unit["rater"] == grader, "cheat"].dropna()
        if "audit" in frame.columns:
            audits = unit["audit"].dropna()
            truth = None if audits.empty else bool(audits.iloc[0])
        else:
            calls = unit.loc[unit["rater"] != grader, "cheat"].dropna().astype(bool)
            truth = None if calls.empty else bool(calls.mean() >= 0.5)
        if mine.empty or truth is None:
            continue
        flagged.append(bool(mine.iloc[0]))
        reference.append(truth)
    return flagged, reference


def figures(frame: pd.DataFrame, *, grader: str = GRADER) -> dict[str, float]:
    """Every figure in FIGURES, computed the straightforward way."""
    table = consensus_table(frame, grader=grader)
    out = {}
    if len(table):
        out["exact_agreement"] = exact_agreement(table.grader_tier, table.human_tier)
        out["kappa"] = quadratic_kappa(table.grader_tier, table.human_tier)
        confusion = confusion_matrix(table.grader_tier, table.human_tier)
    else:
        out["exact_agreement"] = out["kappa"] = float("nan")
        confusion = np.zeros((3, 3), dtype=np.int64)
    out["alpha"] = krippendorff_alpha(reliability_matrix(frame)) if len(frame) else float("nan")
    out["tau"] = mean_group_tau(frame, grader=grader)
    hits, total = pairwise_counts(frame, grader=grader)
    out["pairwise_accuracy"] = hits / total if total else float("nan")
    tops = list(top1_hits(frame, grader=grader).values())
    out["top1"] = float(np.mean(tops)) if tops else float("nan")
    scores = cheat_scores(*cheat_pairs(frame, grader=grader))
    out["cheat_precision"], out["cheat_recall"], out["cheat_f1"] = scores["precision"], scores["recall"], scores["f1"]
    for g in range(3):
        for h in range(3):
            row = confusion[g].sum()
            out[f"confusion_{TIERS[g]}_{TIERS[h]}"] = confusion[g, h] / row if row else float("nan")
    assert set(out) == set(FIGURES)
    return out


def resampled_frame(pieces: list[pd.DataFrame], indices) -> pd.DataFrame:
    """The groups at `indices`, each drawn copy a group of its own."""
    return pd.concat([pieces[i].assign(group=k) for k, i in enumerate(indices)], ignore_index=True)


def bootstrap(frame: pd.DataFrame, *, n_boot: int, seed, level: float = 0.95, grader: str = GRADER) -> dict:
    """{figure: (low, high)}: the figures of every resample, from the same draws as
    `reviews.stats.agreement.bootstrap_ci` with this seed."""
    pieces = [g for _, g in frame.groupby("group", sort=False)]
    draws = np.random.default_rng(seed).integers(0, len(pieces), size=(n_boot, len(pieces)))
    values = {name: [] for name in FIGURES}
    for indices in draws:
        for name, value in figures(resampled_frame(pieces, indices), grader=grader).items():
            values[name].append(value)
    tail = (1.0 - level) / 2.0
    out = {}
    for name, xs in values.items():
        xs = np.array(xs, dtype=np.float64)
        xs = xs[~np.isnan(xs)]
        out[name] = tuple(np.quantile(xs, [tail, 1.0 - tail])) if len(xs) else (float("nan"), float("nan"))
    return out


def ceiling_frame(frame: pd.DataFrame, *, grader: str = GRADER) -> pd.DataFrame:
    """Group by group: the first two people of each group two people judged."""
    kept = []
    for _, group in frame.groupby("group", sort=False):
        people = group[group["rater"] != grader]
        first_two = list(dict.fromkeys(people["rater"]))[:2]
        if len(first_two) < 2:
            continue
        rows = people[people["rater"].isin(first_two)].copy()
        rows["rater"] = rows["rater"].map({first_two[0]: "first", first_two[1]: "second"})
        kept.append(rows.drop(columns=[c for c in ("audit",) if c in rows.columns]))
    return pd.concat(kept) if kept else frame.iloc[:0].drop(columns=[c for c in ("audit",) if c in frame.columns])
