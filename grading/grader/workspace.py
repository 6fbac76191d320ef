"""One group as plain data, and the tools a grader uses to read it. Pure: no Django.

Tools are plain functions of (workspace, **arguments) returning JSON-able data, each with
a JSON-schema signature in TOOLS, so any backend (an LLM's tool calls, the heuristic
grader, a test) uses the same view of the group. Rollout content is data, never
instructions: tools return it inside fields, and backends must quote it as such.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading.method.guide import DEFAULT_GUIDE, Guide
from grading.repos.types import Limits, RepoView, Sandbox
from grading.rollouts.diffs import ParsedPatch, parse_patch

MAX_TEXT = 20_000  # characters of one field a tool returns before it truncates (and says so)
# The states of a task's reference view (GroupWorkspace.reference_view): the base commit with the
# gold patch, and with the task's test patch.
GOLD_STATE = 0
TEST_PATCH_STATE = 1


@dataclass
class RolloutView:
    index: int
    passed: bool | None
    patch: str = ""
    messages: Sequence[dict[str, Any]] = field(default_factory=list)  # read, never changed
    tests: dict[str, Any] = field(default_factory=dict)
    test_log: str = ""
    exit_status: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    _parsed: ParsedPatch | None = None

    @property
    def parsed_patch(self) -> ParsedPatch:
        if self._parsed is None:
            self._parsed = parse_patch(self.patch, render=False)  # line numbers only, no HTML
        return self._parsed


@dataclass
class GroupWorkspace:
    uid: str
    instance_id: str
    repo: str = ""
    base_commit: str = ""
    problem_statement: str = ""
    gold_patch: str = ""
    test_patch: str = ""
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)
    rollouts: list[RolloutView] = field(default_factory=list)
    # The repository at base and at every rollout's state (grading.repos); None when the task
    # names no repository or none is configured. Lazy: nothing is fetched until a tool reads it.
    repo_view: RepoView | None = None
    # The same repository with the task's own patches as states (GOLD_STATE, TEST_PATCH_STATE),
    # when it has them; lazy like repo_view. Read by the differential matrix only.
    reference_view: RepoView | None = None
    checks: CheckBudget | None = None  # None: no more checks may run (the project runs none)
    check_log: list[CheckRecord] = field(default_factory=list)  # checks run on this group, in order
    # The differential matrix (grading.grader.differential.run_matrix), run once a workspace when
    # asked; typed loosely, since that module imports this one
    differential: object = field(default=None, repr=False, compare=False)
    guide: Guide = DEFAULT_GUIDE  # the project's rubric guide: what the tiers and scores mean
    # the task's benchmark images hold history past the base (the project says so): no leak there
    future_history: bool = False
    # prescreen.screen_group's answers per base commit (the rollouts do not change once loaded)
    screened: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def rollout(self, index: int) -> RolloutView:
        for rollout in self.rollouts:
            if rollout.index == index:
                return rollout
        raise KeyError(f"no rollout {index} in group {self.uid}")

    @property
    def passing(self) -> list[RolloutView]:
        return [r for r in self.rollouts if r.passed]

    def check(self, number: int) -> CheckRecord | None:
        return next((c for c in self.check_log if c.number == number), None)

    @property
    def checks_left(self) -> int:
        return 0 if self.checks is None else max(0, self.checks.max_checks - len(self.check_log))


@dataclass(frozen=True)
class CheckRecord:
    """One check the grader ran: evidence of kind "check", cited as "check:<number>"."""

    number: int  # 1-based, in the order they ran
    rollout: int
    command: str
    exit_status: int | None  # None when the sandbox stopped it (see killed)
    seconds: float
    output: str
    truncated: bool = False
    killed: str = ""
    sandbox: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "rollout": self.rollout,
            "command": self.command,
            "exit_status": self.exit_status,
            "seconds": self.seconds,
            "output": self.output,
            "truncated": self.truncated,
            "killed": self.killed,
            "sandbox": self.sandbox,
        }


@dataclass
class CheckBudget:
    """What a grading conversation may run: at most `max_checks` checks in `sandbox`, each under
    `limits` and none past `deadline` (a time.time() instant: the run policy's grading deadline)."""

    sandbox: Sandbox
    limits: Limits = field(default_factory=Limits)
    max_checks: int = 8
    deadline: float | None = None
    # The project's share of the host's checks (grading.repos.shares): at most `project_slots`
    # of its checks at once, under flocks in `lock_dir`; 0 or no project: no share is held.
    project: int | None = None
    project_slots: int = 0
    lock_dir: Path | None = None

    def seconds_left(self, now: float | None = None) -> float | None:
        return None if self.deadline is None else self.deadline - (time.time() if now is None else now)


def clip(text: str, limit: int = MAX_TEXT) -> dict[str, Any]:
    """Text for a tool result, cut at `limit` characters with the cut stated."""
    text = text or ""
    if len(text) <= limit:
        return {"text": text, "truncated": False}
    return {"text": text[:limit], "truncated": True, "total_chars": len(text)}
