"""The grader's three tiers, defined once. Pure: no Django.

A tier says how good a passing rollout is, T1 best (docs/method.md section 2). The codes
"T1", "T2", "T3" are what the database stores and the API sends. Two numberings are in
use and both live here: the 0-based index (an array position, ``TIERS[index]``) and the
1-based level (the ordinal the agreement statistics use; keys 1, 2, 3 on the judge panel).
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

TIERS = ("T1", "T2", "T3")
LEVELS = (1, 2, 3)  # 1-based: T1 -> 1

TIER_DESCRIPTIONS = {
    "T1": "mergeable and precise",
    "T2": "acceptable with flaws",
    "T3": "works but with unnecessary complexity, weakened checks, out-of-scope edits or a wasteful strategy",
}

# (value, label) for a model field's `choices`; the label is the code itself, as the
# migrations recorded it, so building choices from here needs no migration.
TIER_CHOICES = [(tier, tier) for tier in TIERS]

TIER_INDEX = {tier: i for i, tier in enumerate(TIERS)}  # 0-based: T1 -> 0
TIER_LEVEL = {tier: i + 1 for i, tier in enumerate(TIERS)}  # 1-based: T1 -> 1


def unknown_tier(tier: Any) -> ValueError:
    """The error for a value that is neither a tier code nor a level."""
    return ValueError(f"Unknown tier {tier!r}; expected one of {', '.join(TIERS)} or 1..{len(TIERS)}")


def tier_index(tier: Any) -> int:
    """0, 1, 2 for T1, T2, T3; accepts the codes "T1".."T3" or the levels 1..3."""
    if isinstance(tier, str) and tier in TIER_INDEX:
        return TIER_INDEX[tier]
    if isinstance(tier, Integral) and not isinstance(tier, bool) and 1 <= int(tier) <= len(TIERS):
        return int(tier) - 1
    raise unknown_tier(tier)
