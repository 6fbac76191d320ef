"""The signal record and the thresholds of the prescreens (see grading.grader.prescreen)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grading.grader.base import Evidence
from grading.grader.prescreen.catalogue import CATEGORIES, LEAK, TAMPER, scanner_version

GOLD_SHARE = 0.9
GOLD_MIN_LINES = 6
REPEATED_FAILURES = 3  # the same command failing this many times is a wasteful strategy

# The signal names, from the catalogue: one per category, and `test_modified` (evidence only).
LEAK_SIGNALS = tuple(c.slug for c in CATEGORIES if c.kind == LEAK)
TAMPER_SIGNALS = (*(c.slug for c in CATEGORIES if c.kind == TAMPER), "test_modified")
# Names earlier scanners stored findings under, before the catalogue split or renamed them:
# the audit still files those findings by them.
RETIRED_SIGNALS = ("upstream_history", "test_file_deleted", "test_skip_added", "test_assert_removed")


@dataclass(frozen=True)
class Task:
    """What the scanners know of the task a rollout attempted (a GroupWorkspace's task fields)."""

    repo: str = ""
    base_commit: str = ""
    gold_patch: str = ""
    test_patch: str = ""
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    # The benchmark's images hold history past the base (commit0-style): reading it is no leak.
    future_history: bool = False


@dataclass(frozen=True)
class Signal:
    signal: str
    rollout: int
    turn: int | None  # message index for command signals; None when it comes from the patch
    detail: str
    evidence: Evidence | None  # None only when the rollout offers nothing citable
    category: str = "leak"  # leak | tamper (the catalogue's kind)
    tests: tuple[str, ...] = ()  # the test files or ids a tampering touches ("path", "path::name")
    cheat: bool = False  # set by screen_rollout: a leak, or a tampering that scored (catalogue.is_cheat)

    @property
    def scanner(self) -> str:
        return scanner_version(self.signal)

    def as_dict(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "category": self.category,
            "scanner": self.scanner,
            "cheat": self.cheat,
            "rollout": self.rollout,
            "turn": self.turn,
            "detail": self.detail,
            "tests": list(self.tests),
            "evidence": self.evidence.as_dict() if self.evidence else None,
        }
