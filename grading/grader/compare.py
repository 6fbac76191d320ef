"""How far a group's graders disagree (pure: standard library and the tier codes only).

A grader's *calls* on a group are ``{index: (tier, cheat)}`` for the passing rollouts it
graded. Two figures, over every pair of graders on the rollouts both graded:

- the widest tier gap in levels (0 to 2, T1 against T3 is 2), and the rollouts at it;
- the rollouts whose cheat call differs (one grader says cheat, another does not).

The review queue serves the widest gaps first and the cheat audit the split cheat calls
(reviews.selectors.queue, reviews.selectors.audit): where graders differ a person's word
teaches the most. The tier gap is the one juries use (grading.grader.combine.tier_gap).

>>> a = {0: ("T1", False), 1: ("T2", True), 2: ("T3", False)}
>>> b = {0: ("T3", False), 1: ("T2", False), 2: ("T1", False)}
>>> disagreement([a, b])
Disagreement(gap=2, gap_rollouts=(0, 2), cheat_split=(1,))
>>> disagreement([a])
Disagreement(gap=0, gap_rollouts=(), cheat_split=())
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from grading.grader.combine import tier_gap

Calls = dict[int, tuple[str, bool]]


@dataclass(frozen=True)
class Disagreement:
    gap: int  # the widest tier gap between two graders on one rollout
    gap_rollouts: tuple[int, ...]  # the rollouts at that gap (none when it is 0)
    cheat_split: tuple[int, ...]  # the rollouts whose cheat call differs between two graders


def disagreement(calls: Sequence[Calls]) -> Disagreement:
    """The graders' disagreement on one group (each grader's calls once; order does not matter)."""
    calls = [c for c in calls if c]
    widest, per_rollout = tier_gap([{i: (tier, 0) for i, (tier, _) in c.items()} for c in calls])
    at_widest = tuple(sorted(i for i, gap in per_rollout.items() if gap == widest)) if widest else ()
    flags: dict[int, set[bool]] = {}
    for c in calls:
        for index, (_, cheat) in c.items():
            flags.setdefault(index, set()).add(bool(cheat))
    split = tuple(sorted(i for i, seen in flags.items() if len(seen) > 1))
    return Disagreement(widest, at_widest, split)
