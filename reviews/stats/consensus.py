"""Checking, comparing and combining judgments of one group. Pure: standard library (and the
tier codes of grading.method.tiers) only.

A *ranking* is what one rater said about a group's passing rollouts:
``{rollout_index: (tier, rank)}`` with tiers "T1".."T3" and group-wide ranks (1 = best,
ties share a rank).

>>> bob = {3: ("T1", 1), 5: ("T2", 2), 7: ("T2", 2)}
>>> grader = {3: ("T2", 2), 5: ("T1", 1), 7: ("T2", 2)}
>>> [d["kind"] for d in disagreements({"bob": bob, "grader": grader})]
['tier', 'top1']
>>> consensus([bob, {3: ("T1", 1), 5: ("T3", 3), 7: ("T2", 2)}])
{3: ('T1', 1), 5: ('T2', 2), 7: ('T2', 2)}
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from statistics import median_low
from typing import Any

from grading.method.tiers import TIERS

Ranking = dict[int, tuple[str, int]]


def ranks_from_tiers(tiers: dict[int, str]) -> dict[int, int]:
    """Dense group-wide ranks when a reviewer gave tiers only: every T1 shares rank 1, and so on."""
    present = sorted({TIERS.index(t) for t in tiers.values()})
    return {index: present.index(TIERS.index(tier)) + 1 for index, tier in tiers.items()}


def fill_ranks(given: dict[int, tuple[str, int | None]]) -> dict[int, int]:
    """Group-wide ranks from one reviewer's tiers and the ranks they gave, any of which may
    be blank (None): the one place a judgment's ranks are derived (services.judgments).

    None given: ranks_from_tiers. All given: as given. Some given: blank ranks follow
    tiers — the order is by tier, then within a tier the ranked rollouts by their rank and
    the blank ones after them, tied with each other; renumbered densely 1, 2, 3… The ranks
    given must not contradict the tiers (rank_contradictions, checked first by the caller),
    so the order they say among themselves is kept.

    >>> fill_ranks({0: ("T1", None), 1: ("T2", None), 2: ("T2", None)})
    {0: 1, 1: 2, 2: 2}
    >>> fill_ranks({0: ("T1", None), 1: ("T1", 1), 2: ("T2", None), 3: ("T3", 4)})
    {0: 2, 1: 1, 2: 3, 3: 4}
    """
    if all(rank is None for _, rank in given.values()):
        return ranks_from_tiers({index: tier for index, (tier, _) in given.items()})
    if all(rank is not None for _, rank in given.values()):
        return {index: rank for index, (_, rank) in given.items() if rank is not None}
    blank = float("inf")
    key = {index: (TIERS.index(tier), blank if rank is None else rank) for index, (tier, rank) in given.items()}
    order = sorted(set(key.values()))
    return {index: order.index(k) + 1 for index, k in key.items()}


def rank_contradictions(ranking: Ranking, name: Callable[[int], str] = lambda index: f"#{index}") -> list[str]:
    """Pairs where a rollout of a worse tier is ranked strictly above one of a better tier,
    each rollout named by `name` (a blind judge's lane label, or "#<index>")."""
    problems = []
    items = sorted(ranking.items())
    for (i, (tier_i, rank_i)), (j, (tier_j, rank_j)) in combinations(items, 2):
        if TIERS.index(tier_i) < TIERS.index(tier_j) and rank_i > rank_j:
            problems.append(f"{name(j)} ({tier_j}) is ranked above {name(i)} ({tier_i})")
        elif TIERS.index(tier_j) < TIERS.index(tier_i) and rank_j > rank_i:
            problems.append(f"{name(i)} ({tier_i}) is ranked above {name(j)} ({tier_j})")
    return problems


def top1(ranking: Ranking) -> frozenset[int]:
    if not ranking:
        return frozenset()
    best = min(rank for _, rank in ranking.values())
    return frozenset(index for index, (_, rank) in ranking.items() if rank == best)


def disagreements(rankings: dict[str, Ranking]) -> list[dict[str, Any]]:
    """Why a group needs an adjudicator: any two raters whose tiers differ on a rollout
    both judged (by one tier or more) or whose best rollouts differ."""
    found = []
    for (a, ra), (b, rb) in combinations(sorted(rankings.items()), 2):
        shared = sorted(set(ra) & set(rb))
        if not shared:
            continue
        tiers_apart = [i for i in shared if ra[i][0] != rb[i][0]]
        if tiers_apart:
            gap = max(abs(TIERS.index(ra[i][0]) - TIERS.index(rb[i][0])) for i in tiers_apart)
            found.append({"kind": "tier", "between": [a, b], "rollouts": tiers_apart, "max_gap": gap})
        best_a = top1({i: ra[i] for i in shared})
        best_b = top1({i: rb[i] for i in shared})
        if best_a != best_b:
            found.append({"kind": "top1", "between": [a, b], "rollouts": sorted(best_a ^ best_b)})
    return found


def consensus(rankings: list[Ranking]) -> Ranking:
    """The people's combined view: the one ranking when there is one; otherwise, per rollout,
    the median tier (lower median, so ties go to the better tier) and ranks re-derived from
    the median of each rater's rank. An adjudication, where there is one, replaces this."""
    rankings = [r for r in rankings if r]
    if not rankings:
        return {}
    if len(rankings) == 1:
        return dict(rankings[0])
    indexes = sorted(set().union(*rankings))
    tiers = {i: TIERS[median_low([TIERS.index(r[i][0]) for r in rankings if i in r])] for i in indexes}
    mid_rank = {i: median_low([r[i][1] for r in rankings if i in r]) for i in indexes}
    # Ranks must agree with tiers: order by (tier, median rank), equal pairs tie.
    keys = sorted({(TIERS.index(tiers[i]), mid_rank[i]) for i in indexes})
    return {i: (tiers[i], keys.index((TIERS.index(tiers[i]), mid_rank[i])) + 1) for i in indexes}
