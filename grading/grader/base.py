"""What every grader backend takes and returns. Pure: no Django.

A backend gets a `GroupWorkspace` (grading.grader.workspace) and returns a
`GraderResult`: per passing rollout a tier, a group-wide rank (ties allowed), five rubric
scores, a cheat flag and evidence items; or no judgments with status invalid/timeout,
in which case the group falls back (docs/method.md §2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from grading.grader.workspace import CheckRecord, GroupWorkspace
from grading.method.turn_weights import CITED_CATEGORIES

# The rubric a judgment scores (RUBRIC, SCORE_RANGE, LOW_SCORE) is the guide's: grading.method.guide.
EVIDENCE_KINDS = ("patch", "turn", "test", "file", "check")
# What a turn citation may say of its turn: it was spent for nothing. Such turns weigh less
# in per-token advantages (grading.method.turn_weights, docs/method.md §9).
TURN_CATEGORIES = CITED_CATEGORIES


@dataclass
class Evidence:
    kind: str  # patch | turn | test | file | check
    rollout: int
    # patch: "path:line" (new side); turn: message index; test: test id or "log:line";
    # file: "<rollout|base>:path:line" (the repository at that state); check: the check's number
    locator: str
    note: str = ""
    category: str = ""  # turn citations only: one of TURN_CATEGORIES, or "" for anything else

    def as_dict(self) -> dict[str, Any]:
        out = {"kind": self.kind, "rollout": self.rollout, "locator": self.locator, "note": self.note}
        if self.category:  # stored only when said, so older verdicts and their copies compare equal
            out["category"] = self.category
        return out


@dataclass
class RolloutJudgment:
    index: int
    tier: str
    rank: int
    scores: dict[str, int] = field(default_factory=dict)
    cheat: bool = False
    evidence: list[Evidence] = field(default_factory=list)


@dataclass
class GraderResult:
    status: str  # valid | invalid | timeout
    judgments: list[RolloutJudgment] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)  # turns, prompt_tokens, completion_tokens, latency_s, ...
    raw: dict[str, Any] = field(default_factory=dict)
    checks: list[CheckRecord] = field(default_factory=list)  # run in the sandbox, citable as check:<number>


class Grader(Protocol):
    name: str  # "<backend>@<version>": one verdict per group per name

    def grade(self, workspace: GroupWorkspace) -> GraderResult: ...
