"""Combining several graders' verdicts of one group into a jury's (pure: standard library and
the tier codes only).

A *ranking* is one grader's judgment of a group's passing rollouts, ``{index: (tier, rank)}``
(reviews/stats/consensus.py uses the same shape for people). Three rules:

- ``majority``: per rollout the most common tier; a tie between tiers goes to the lower median
  of the members' tiers (the better tier), as the people's consensus does; ranks re-derived
  from (tier, lower-median rank) so they never contradict the tiers.
- ``mean_rank``: tiers as ``majority``; ranks from (tier, mean of the members' ranks).
- ``agree_or_abstain``: when two members' tiers differ by more than ``max_gap`` levels on any
  rollout the jury abstains (no ranking); otherwise it combines as ``majority``.

>>> a = {0: ("T1", 1), 1: ("T2", 2)}
>>> b = {0: ("T1", 1), 1: ("T3", 3)}
>>> combine("majority", [a, b]).ranking
{0: ('T1', 1), 1: ('T2', 2)}
>>> combine("agree_or_abstain", [a, {0: ("T3", 2), 1: ("T1", 1)}], max_gap=1).abstained
True
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from statistics import fmean, median_low

from grading.method.tiers import TIERS

Ranking = dict[int, tuple[str, int]]

RULES = ("majority", "mean_rank", "agree_or_abstain")
MAX_MEMBERS = 9


@dataclass(frozen=True)
class JuryOutcome:
    ranking: Ranking  # empty when the jury abstains
    abstained: bool
    max_gap: int  # the widest tier gap between two members on one rollout
    split: list[int]  # rollouts on which two members' tiers differ by more than the allowed gap


def tier_gap(rankings: list[Ranking]) -> tuple[int, dict[int, int]]:
    """The widest tier gap between any two members, overall and per rollout both judged."""
    per_rollout: dict[int, int] = {}
    for ra, rb in combinations(rankings, 2):
        for index in set(ra) & set(rb):
            gap = abs(TIERS.index(ra[index][0]) - TIERS.index(rb[index][0]))
            per_rollout[index] = max(per_rollout.get(index, 0), gap)
    return max(per_rollout.values(), default=0), per_rollout


def _tier(values: list[str]) -> str:
    counts = Counter(values).most_common()
    best = counts[0][1]
    leaders = [tier for tier, n in counts if n == best]
    if len(leaders) == 1:
        return leaders[0]
    return TIERS[median_low(sorted(TIERS.index(t) for t in values))]


def combine(rule: str, rankings: list[Ranking], *, max_gap: int = 0) -> JuryOutcome:
    """The jury's ranking of a group from its members' rankings (every member valid)."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
    rankings = [r for r in rankings if r]
    widest, per_rollout = tier_gap(rankings)
    split = sorted(i for i, gap in per_rollout.items() if gap > max_gap)
    if rule == "agree_or_abstain" and split:
        return JuryOutcome({}, True, widest, split)
    if not rankings:
        return JuryOutcome({}, False, widest, split)
    indexes = sorted(set().union(*rankings))
    tiers = {i: _tier([r[i][0] for r in rankings if i in r]) for i in indexes}
    mid: dict[int, float]
    if rule == "mean_rank":
        mid = {i: fmean(r[i][1] for r in rankings if i in r) for i in indexes}
    else:
        mid = {i: float(median_low([r[i][1] for r in rankings if i in r])) for i in indexes}
    keys = sorted({(TIERS.index(tiers[i]), mid[i]) for i in indexes})
    ranking = {i: (tiers[i], keys.index((TIERS.index(tiers[i]), mid[i])) + 1) for i in indexes}
    return JuryOutcome(ranking, False, widest, split)
