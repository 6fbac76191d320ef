"""Whether a fitted mapping rests on enough judgments to be activated without an override.

Pure: standard library only, tested without a database.

A calibrated mapping (docs/method.md §5) is fitted from the pairs (grader tier g, people's
tier h) of the judged mixed groups. Each tier's factor is the mean people's quality of the
rollouts the grader put in that tier, so it rests on the pairs of its row C[g][·]: a row
with no pairs is the prior q(g) and nothing else. A project sets a minimum (by default 30
judged mixed groups, and every grader tier seen in at least 5 pairs); below it the fit is
"too little evidence", and activating it needs an explicit override.

>>> minimum = EvidenceMinimum()
>>> thin = assess(counts=[[2, 0, 0], [0, 0, 0], [0, 0, 1]], n_groups=3, minimum=minimum)
>>> thin.sufficient, thin.tier_pairs
(False, (2, 0, 1))
>>> thin.shortfalls  # doctest: +NORMALIZE_WHITESPACE
('3 judged mixed groups, 30 needed', 'T1 seen in 2 pairs, 5 needed',
 'T2 seen in 0 pairs, 5 needed', 'T3 seen in 1 pair, 5 needed')
>>> assess(counts=[[20, 3, 0], [4, 11, 2], [0, 1, 7]], n_groups=30, minimum=minimum).sufficient
True

A minimum of zero groups and zero pairs lets anything through, an empty fit included:

>>> assess(counts=[[0] * 3] * 3, n_groups=0, minimum=EvidenceMinimum(groups=0, tier_pairs=0)).sufficient
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grading.method.tiers import TIERS

DEFAULT_MIN_GROUPS = 30
DEFAULT_MIN_TIER_PAIRS = 5
MAX_MINIMUM = 1_000_000  # a bound for the form and the API, not a judgement on evidence


@dataclass(frozen=True)
class EvidenceMinimum:
    """What a project asks of a fit before it may be activated without an override."""

    groups: int = DEFAULT_MIN_GROUPS  # judged mixed groups pairing a grader verdict with people's tiers
    tier_pairs: int = DEFAULT_MIN_TIER_PAIRS  # pairs in every grader tier's row

    def __post_init__(self) -> None:
        for name in ("groups", "tier_pairs"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_MINIMUM:
                raise ValueError(f"{name} must be a whole number from 0 to {MAX_MINIMUM}; got {value!r}")

    def to_dict(self) -> dict[str, int]:
        return {"groups": self.groups, "tier_pairs": self.tier_pairs}


@dataclass(frozen=True)
class Evidence:
    """How much a fit rests on, against a minimum."""

    n_groups: int
    tier_pairs: tuple[int, int, int]  # pairs per grader tier T1..T3 (row sums of the counts)
    minimum: EvidenceMinimum

    @property
    def n_pairs(self) -> int:
        return sum(self.tier_pairs)

    @property
    def shortfalls(self) -> tuple[str, ...]:
        """What is missing, in words; empty when the fit meets the minimum."""
        out = []
        if self.n_groups < self.minimum.groups:
            out.append(f"{self.n_groups} judged mixed group{_s(self.n_groups)}, {self.minimum.groups} needed")
        for tier, n in zip(TIERS, self.tier_pairs):
            if n < self.minimum.tier_pairs:
                out.append(f"{tier} seen in {n} pair{_s(n)}, {self.minimum.tier_pairs} needed")
        return tuple(out)

    @property
    def sufficient(self) -> bool:
        return not self.shortfalls

    def to_dict(self) -> dict[str, Any]:
        return {
            "sufficient": self.sufficient,
            "n_groups": self.n_groups,
            "tier_pairs": dict(zip(TIERS, self.tier_pairs)),
            "minimum": self.minimum.to_dict(),
            "shortfalls": list(self.shortfalls),
        }


class TooLittleEvidence(Exception):
    """Activating a fit below its project's minimum was asked for without an override."""

    def __init__(self, evidence: Evidence):
        self.evidence = evidence
        super().__init__("too little evidence: " + "; ".join(evidence.shortfalls))


def assess(*, counts: Sequence[Sequence[float]], n_groups: int | None, minimum: EvidenceMinimum) -> Evidence:
    """The evidence of a fit from its 3x3 count table (rows: grader tier) and its number of
    groups. An unknown number of groups (a fit recorded without it) counts as none."""
    rows = [list(row) for row in counts]
    if len(rows) != len(TIERS) or any(len(row) != len(TIERS) for row in rows):
        raise ValueError(f"counts must be a {len(TIERS)}x{len(TIERS)} table; got {counts!r}")
    tier_pairs = tuple(round(sum(float(c) for c in row)) for row in rows)
    return Evidence(n_groups=int(n_groups or 0), tier_pairs=tier_pairs, minimum=minimum)  # type: ignore[arg-type]


def recorded_evidence(fit: dict[str, Any], minimum: EvidenceMinimum) -> Evidence | None:
    """The evidence of a stored mapping's `fit` record, or None for a mapping that records
    no count table (the built-in default, one set by hand): those claim no evidence."""
    counts = fit.get("counts") if isinstance(fit, dict) else None
    if not counts:
        return None
    try:
        return assess(counts=counts, n_groups=fit.get("n_groups"), minimum=minimum)
    except (TypeError, ValueError):  # a malformed record shows no evidence
        return Evidence(n_groups=0, tier_pairs=(0, 0, 0), minimum=minimum)


def _s(n: int) -> str:
    return "" if n == 1 else "s"
