"""The grader bench: several graders against people on the same groups. Pure: stdlib, NumPy, pandas.

The frame is the long agreement frame (reviews.stats.agreement.frame) with one rater per
grader, named by the grader ("heuristic@1", "jury:j@1"), and one per person. `graders`
says which raters are graders; every other rater is a person, so a frame holds only the
compared graders and people (a grader left out of `graders` would count as a person).

Every figure is measured on the same groups: those every compared grader tiered and at
least one person judged. Each grader's figures come from the agreement report's per-group
statistics; the bootstrap draws the same group indices for every grader (same seed, same
groups in the same order), so a paired difference a − b is taken resample by resample and
its interval reflects that both graders saw the same groups.

>>> import pandas as pd
>>> frame = pd.DataFrame({
...     "group": ["g"] * 6 + ["h"] * 6,
...     "rollout": [0, 1] * 6,
...     "rater": ["a", "a", "b", "b", "bob", "bob"] * 2,
...     "tier": ["T1", "T2", "T1", "T1", "T1", "T2", "T2", "T3", "T2", "T2", "T2", "T3"],
...     "rank": [1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2],
... })
>>> bench = compare(frame, ["a", "b"], n_boot=200, seed=0)
>>> bench.groups, bench.graders["a"]["exact_agreement"].value, bench.graders["b"]["exact_agreement"].value
(2, 1.0, 0.5)
>>> bench.paired[("a", "b")]["exact_agreement"].value
0.5
>>> round(n_eff(2, 0.0), 6), round(n_eff(9, 0.8), 3)
(2.0, 1.216)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from reviews.stats.agreement.figures import FIGURES, figures_from_sums
from reviews.stats.agreement.frame import GRADER
from reviews.stats.agreement.groups import GroupStatistics, group_statistics
from reviews.stats.agreement.report import Figure, resample_sums

# The figures the bench reports for each grader (the confusion shares stay on the calibration page).
BENCH_FIGURES = (
    "exact_agreement",
    "kappa",
    "alpha",
    "tau",
    "pairwise_accuracy",
    "top1",
    "cheat_precision",
    "cheat_recall",
)
# Between two graders: how far they agree with each other (no audits: the second's calls are the reference).
BETWEEN_FIGURES = ("exact_agreement", "kappa", "tau", "pairwise_accuracy", "top1")
JURY_PREFIX = "jury:"
OTHER = "other"


@dataclass(frozen=True)
class Bench:
    groups: int  # the compared groups
    group_keys: list[Any]
    graders: dict[str, dict[str, Figure]]
    paired: dict[tuple[str, str], dict[str, Figure]] = field(default_factory=dict)  # (a, b): a − b
    between: dict[tuple[str, str], dict[str, Figure]] = field(default_factory=dict)


def n_eff(n: int, rho: float) -> float:
    """Effective number of independent graders of a panel of n with mean pairwise
    agreement beyond chance rho: n / (1 + (n − 1)·rho). NaN when rho is NaN."""
    if n < 1:
        raise ValueError(f"a panel has at least one member; got {n}")
    if np.isnan(rho):
        return float("nan")
    return float(n / (1.0 + (n - 1) * rho))


def compared_groups(frame: pd.DataFrame, graders: Sequence[str]) -> list[Any]:
    """The groups every grader tiered and at least one person judged, sorted."""
    if frame.empty or not graders:
        return []
    tiered = frame[frame["tier"].notna()]
    per_rater = tiered.groupby("group")["rater"].agg(set)
    names = set(graders)
    keep = [g for g, raters in per_rater.items() if names <= raters and raters - names]
    return sorted(keep, key=str)


def _grader_frame(frame: pd.DataFrame, grader: str, graders: Sequence[str]) -> pd.DataFrame:
    """One grader (renamed GRADER) and the people; the other graders' rows dropped."""
    others = set(graders) - {grader}
    out = frame[~frame["rater"].isin(others)].copy()
    out["rater"] = np.where(out["rater"] == grader, GRADER, out["rater"])
    return out


def _pair_frame(frame: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Grader a in the grader's place, grader b as the only 'person'; b's cheat calls are the reference."""
    out = frame[frame["rater"].isin([a, b])].drop(columns=[c for c in ("audit",) if c in frame.columns]).copy()
    out["rater"] = np.where(out["rater"] == a, GRADER, OTHER)
    return out


def _ordered(frame: pd.DataFrame, groups: Sequence[Any]) -> pd.DataFrame:
    """The rows of `groups`, in that order of groups (group_statistics keeps first appearance)."""
    position = {g: i for i, g in enumerate(groups)}
    rows = frame[frame["group"].isin(position.keys())]
    order = rows["group"].map(position).to_numpy()
    return rows.iloc[np.argsort(order, kind="stable")]


def _statistics(frame: pd.DataFrame, groups: Sequence[Any]) -> GroupStatistics:
    stats = group_statistics(_ordered(frame, groups))
    if list(stats.groups) != list(groups):  # every compared group has a grader row, so this holds
        raise AssertionError("group order differs between graders")
    return stats


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    values = values[~np.isnan(values)]
    if not len(values):
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def _figures(
    point: dict[str, tuple[np.ndarray, np.ndarray]],
    boot: dict[str, tuple[np.ndarray, np.ndarray]] | None,
    names: Sequence[str],
    level: float,
) -> dict[str, Figure]:
    out = {}
    for name in names:
        low, high = _interval(boot[name][0], level) if boot is not None else (float("nan"), float("nan"))
        out[name] = Figure(float(point[name][0][0]), low, high, round(float(point[name][1][0])))
    return out


def compare(
    frame: pd.DataFrame,
    graders: Sequence[str],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Bench:
    """Every grader against people on the compared groups, paired differences between every
    two graders (the same resamples for both), and each two graders' agreement with each other."""
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0; got {n_boot}")
    if len(set(graders)) != len(graders):
        raise ValueError("a grader is named twice")
    groups = compared_groups(frame, graders)
    if not groups:
        return Bench(0, [], {g: {} for g in graders})
    point: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    boot: dict[str, dict[str, tuple[np.ndarray, np.ndarray]] | None] = {}
    for grader in graders:
        stats = _statistics(_grader_frame(frame, grader, graders), groups)
        point[grader] = figures_from_sums(stats.table.sum(axis=0))
        boot[grader] = figures_from_sums(resample_sums(stats, n_boot, seed)) if n_boot else None
    per_grader = {g: _figures(point[g], boot[g], BENCH_FIGURES, level) for g in graders}

    paired: dict[tuple[str, str], dict[str, Figure]] = {}
    between: dict[tuple[str, str], dict[str, Figure]] = {}
    for a, b in combinations(graders, 2):
        diffs = {}
        for name in BENCH_FIGURES:
            value = float(point[a][name][0][0] - point[b][name][0][0])
            low = high = float("nan")
            boot_a, boot_b = boot[a], boot[b]
            if boot_a is not None and boot_b is not None:
                low, high = _interval(boot_a[name][0] - boot_b[name][0], level)
            n = min(round(float(point[a][name][1][0])), round(float(point[b][name][1][0])))
            diffs[name] = Figure(value, low, high, n)
        paired[(a, b)] = diffs
        stats = _statistics(_pair_frame(frame, a, b), groups)
        pair_boot = figures_from_sums(resample_sums(stats, n_boot, seed)) if n_boot else None
        between[(a, b)] = _figures(figures_from_sums(stats.table.sum(axis=0)), pair_boot, BETWEEN_FIGURES, level)
    return Bench(len(groups), groups, per_grader, paired, between)


@dataclass(frozen=True)
class CitationSplit:
    """One grader's figures on the compared groups where its verdict cites for every judgment
    that speaks against a rollout (`cited`) and where it leaves one or more of them uncited
    (`uncited`, grading.grader.evidence.is_uncited), with how many groups each rests on."""

    cited_groups: int
    uncited_groups: int
    uncited_judgments: int
    cited: dict[str, Figure]
    uncited: dict[str, Figure]


def _figures_on(
    frame: pd.DataFrame, grader: str, graders: Sequence[str], groups: Sequence[Any], n_boot: int, seed: int, level: float
) -> dict[str, Figure]:
    """The grader's figures on `groups` alone (all NaN on none)."""
    if not groups:
        return {name: Figure(float("nan"), float("nan"), float("nan"), 0) for name in BENCH_FIGURES}
    stats = _statistics(_grader_frame(frame, grader, graders), groups)
    boot = figures_from_sums(resample_sums(stats, n_boot, seed)) if n_boot else None
    return _figures(figures_from_sums(stats.table.sum(axis=0)), boot, BENCH_FIGURES, level)


def by_citation(
    frame: pd.DataFrame,
    graders: Sequence[str],
    groups: Sequence[Any],
    uncited: Mapping[str, Mapping[Any, int]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, CitationSplit]:
    """Each grader's figures against people split by citation, on `groups` (the compared groups,
    Bench.group_keys): `uncited[grader]` counts its uncited judgments per group. The bench's
    figures take both kinds of verdict together; this says whether the uncited ones agree less.

    >>> frame = pd.DataFrame({
    ...     "group": ["g", "g", "g", "g", "h", "h", "h", "h"],
    ...     "rollout": [0, 1] * 4,
    ...     "rater": ["a", "a", "bob", "bob"] * 2,
    ...     "tier": ["T1", "T2", "T1", "T2", "T1", "T3", "T2", "T3"],
    ...     "rank": [1, 2] * 4,
    ... })
    >>> split = by_citation(frame, ["a"], ["g", "h"], {"a": {"h": 1}}, n_boot=0)["a"]
    >>> split.cited_groups, split.uncited_groups, split.uncited_judgments
    (1, 1, 1)
    >>> split.cited["exact_agreement"].value, split.uncited["exact_agreement"].value
    (1.0, 0.5)
    """
    out = {}
    for grader in graders:
        counts = uncited.get(grader, {})
        without = [g for g in groups if counts.get(g, 0)]
        cited = [g for g in groups if not counts.get(g, 0)]
        out[grader] = CitationSplit(
            cited_groups=len(cited),
            uncited_groups=len(without),
            uncited_judgments=int(sum(counts.get(g, 0) for g in without)),
            cited=_figures_on(frame, grader, graders, cited, n_boot, seed, level),
            uncited=_figures_on(frame, grader, graders, without, n_boot, seed, level),
        )
    return out


def pairwise_kappa(frame: pd.DataFrame, members: Sequence[str], groups: Sequence[Any] | None = None) -> float:
    """Mean quadratic κ over every two members, on the rollouts both tiered (in `groups`, or all).
    NaN with fewer than two members or when no pair has a defined κ."""
    kappas = []
    for a, b in combinations(list(dict.fromkeys(members)), 2):
        pair = _pair_frame(frame, a, b)
        if groups is not None:
            pair = pair[pair["group"].isin(set(groups))]
        if pair.empty:
            continue
        kappa = float(figures_from_sums(group_statistics(pair).table.sum(axis=0))["kappa"][0][0])
        if not np.isnan(kappa):
            kappas.append(kappa)
    return float(np.mean(kappas)) if kappas else float("nan")


def jury_n_eff(frame: pd.DataFrame, members: Sequence[str], groups: Sequence[Any] | None = None) -> dict[str, Any]:
    """{"members", "n", "mean_kappa", "n_eff"} for a jury of `members` on `groups`."""
    unique = list(dict.fromkeys(members))
    rho = pairwise_kappa(frame, unique, groups)
    value = n_eff(len(unique), rho) if unique else float("nan")
    return {"members": unique, "n": len(unique), "mean_kappa": rho, "n_eff": value}


def usage_per_group(usages: Mapping[Any, Mapping[str, Any]], groups: Sequence[Any]) -> dict[str, float]:
    """Mean tokens (prompt + completion) and cost per group over `groups`, from each group's
    verdict usage ({"prompt_tokens", "completion_tokens", "cost_usd"}); a missing count is 0,
    and cost is NaN when no verdict reports one."""
    if not groups:
        return {"tokens": float("nan"), "prompt_tokens": float("nan"), "completion_tokens": float("nan"), "cost": float("nan")}

    def number(usage: Mapping[str, Any], key: str) -> float | None:
        value = usage.get(key)
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    prompt = [number(usages.get(g, {}), "prompt_tokens") or 0.0 for g in groups]
    completion = [number(usages.get(g, {}), "completion_tokens") or 0.0 for g in groups]
    costs = [number(usages.get(g, {}), "cost_usd") for g in groups]
    known = [c for c in costs if c is not None]
    return {
        "tokens": float(np.mean(np.add(prompt, completion))),
        "prompt_tokens": float(np.mean(prompt)),
        "completion_tokens": float(np.mean(completion)),
        "cost": float(sum(known) / len(groups)) if known else float("nan"),
    }


__all__ = [
    "BENCH_FIGURES",
    "BETWEEN_FIGURES",
    "FIGURES",
    "Bench",
    "CitationSplit",
    "by_citation",
    "compare",
    "jury_n_eff",
    "n_eff",
    "usage_per_group",
]
