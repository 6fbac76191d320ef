"""Differential evidence between passing patches: each one's new tests run on the others' states.

Pure: no Django. Patches that pass the task's tests can still behave differently from one
another and from the reference fix (PatchDiff, ICSE 2026, found 29.6 % of plausible SWE-bench
patches do). Where a project runs checks, every passing rollout's added tests — the test files
its patch adds or changes, and the test functions in them its patch touches — and the task's
own test patch (the gold patch's tests) are run on every other passing rollout's state and on
the gold patch's. Each cell of that matrix is one check (grading.grader.tools.run_sandboxed,
the path the model's run_check takes), numbered and citable as `check:<n>` like any other,
within the group's check budget and deadline; cells past either are recorded as not run, with
why.

A cell's check is cited on the rollout whose code it exercised (the state), except on the gold
patch's state, where it is cited on the rollout whose tests ran.

Worked example: rollouts 0 and 1 both make `mean([])` pass the task's tests; 0 returns 0.0,
1 raises. 0 adds `test_mean_empty` (expects 0.0), 1 adds `test_mean_raises` (expects an
error). With no gold patch the matrix is two cells, 0's tests on 1 and 1's tests on 0: 0's
test fails on 1's patch and 1's test fails on 0's patch, each cell a check (`check:1`,
`check:2`), and the sentences read "#0's new test fails on #1's patch" and "#1's new test
fails on #0's patch". A third rollout 2 that agrees with 0 makes 1 the odd one out: it
disagrees with two peers and agrees with none (`Standing.outvoted`).
"""

from __future__ import annotations

import ast
import base64
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from grading.grader.prescreen.paths import is_test_path
from grading.grader.tools import ToolError, run_sandboxed
from grading.grader.workspace import GOLD_STATE, TEST_PATCH_STATE, CheckRecord, GroupWorkspace
from grading.repos.types import At, RepoError, RepoView
from grading.rollouts.diffs import ParsedPatch, parse_patch

GOLD: Literal["gold"] = "gold"  # the task's reference: its gold patch as a state, its test patch as tests
Participant = int | Literal["gold"]
Outcome = Literal["pass", "fail", "error", "not run"]

MAX_SOURCE_CHARS = 1_000_000  # a test file longer than this is not parsed for its test functions
MAX_TESTS = 50  # test ids one cell runs
MAX_OVERLAY_BYTES = 64_000  # test files one cell copies onto a state (they travel in the command)

# Runs test ids without pytest, where the state's environment has none: each `path::name` or
# `path::Class::name` imported from its file and called. Exit 0 all passed, 1 a test failed,
# 2 a file could not be imported, as pytest's own statuses say. No single quote inside: the
# command quotes it whole.
RUNNER = """import importlib.util, os, sys, traceback
sys.path.insert(0, os.getcwd())
mods, status = {}, 0
for node in sys.argv[1:]:
    path, *names = node.split("::")
    if path not in mods:
        try:
            sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
            spec = importlib.util.spec_from_file_location("gagar_tests_%d" % len(mods), path)
            mods[path] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mods[path])
        except BaseException:
            mods[path] = None
            traceback.print_exc(limit=-3)
    if mods[path] is None:
        print("ERROR", node)
        status = 2
        continue
    try:
        target = mods[path]
        for name in names[:-1]:
            target = getattr(target, name)()
        getattr(target, names[-1])()
        print("PASSED", node)
    except BaseException:
        traceback.print_exc(limit=-3)
        print("FAILED", node)
        status = max(status, 1)
sys.exit(status)
"""


@dataclass(frozen=True)
class AddedTests:
    """What a patch adds to the tests: the test files it adds or changes (to copy onto another
    state) and the test ids of the functions in them it touches (to run there)."""

    files: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cell:
    """`tests_of`'s added tests run on `state`'s patch: a check (`check`), or why not."""

    tests_of: Participant
    state: Participant
    tests: tuple[str, ...] = ()
    outcome: Outcome = "not run"
    check: int | None = None  # the check's number: cite it as check:<n>
    cited_on: int | None = None  # the rollout the check is cited on
    why: str = ""  # not run: why; error: what stopped it

    def as_dict(self) -> dict[str, Any]:
        return {
            "tests_of": self.tests_of,
            "state": self.state,
            "tests": list(self.tests),
            "outcome": self.outcome,
            "check": self.check,
            "cited_on": self.cited_on,
            "why": self.why,
        }

    def describe(self, name: Callable[[int], str] = lambda i: f"#{i}") -> str:
        """The cell in words: "#3's new test fails on #5's patch" (its outcome as it is)."""
        several = len(self.tests) > 1
        subject = ("The task's " if self.tests_of == GOLD else f"{name(self.tests_of)}'s new ") + ("tests" if several else "test")
        where = "the reference patch" if self.state == GOLD else f"{name(self.state)}'s patch"
        verb = {
            "pass": "pass on" if several else "passes on",
            "fail": "fail on" if several else "fails on",
            "error": "cannot run on",
            "not run": "were not run on" if several else "was not run on",
        }[self.outcome]
        return f"{subject} {verb} {where}"

    @classmethod
    def from_dict(cls, data: Any) -> Cell | None:
        """A stored cell, or None when it is not one (a verdict's raw is JSON from anywhere)."""
        if not isinstance(data, dict):
            return None
        tests_of, state = _participant(data.get("tests_of")), _participant(data.get("state"))
        outcome = data.get("outcome")
        if tests_of is None or state is None or outcome not in ("pass", "fail", "error", "not run"):
            return None
        check, cited_on = data.get("check"), data.get("cited_on")
        return cls(
            tests_of=tests_of,
            state=state,
            tests=tuple(str(t) for t in data.get("tests") or () if isinstance(t, str))[:MAX_TESTS],
            outcome=outcome,
            check=check if isinstance(check, int) and not isinstance(check, bool) else None,
            cited_on=cited_on if isinstance(cited_on, int) and not isinstance(cited_on, bool) else None,
            why=str(data.get("why") or "")[:500],
        )


@dataclass(frozen=True)
class Sentence:
    """A divergence in words ("#3's new test fails on #5's patch") and the check it cites."""

    text: str
    check: int | None
    cited_on: int | None


@dataclass(frozen=True)
class Standing:
    """Where one rollout stands in the matrix. Peers are the other passing rollouts: one
    `caught_by` it (their added tests fail on its patch, its own pass on theirs), one it `caught`
    (the other way round), one that `agree`s (every cell run between them passed) or that
    `disagree`s (a test of either fails on the other's patch). `reference`: the cells where the
    task's tests fail on its patch or its tests on the gold patch; `cited`: the cells where
    peers' tests fail on its patch (each a check cited on it)."""

    caught_by: tuple[int, ...] = ()
    caught: tuple[int, ...] = ()
    agree: tuple[int, ...] = ()
    disagree: tuple[int, ...] = ()
    reference: tuple[Cell, ...] = ()
    cited: tuple[Cell, ...] = ()

    @property
    def outvoted(self) -> bool:
        """More peers disagree with it than agree with it and itself together."""
        return len(self.disagree) > len(self.agree) + 1


@dataclass
class DifferentialMatrix:
    participants: tuple[Participant, ...] = ()
    cells: list[Cell] = field(default_factory=list)
    tests: dict[Participant, tuple[str, ...]] = field(default_factory=dict)  # each participant's added test ids
    stopped: str = ""  # why cells were left unrun (the budget, the deadline, no sandbox)

    def cell(self, tests_of: Participant, state: Participant) -> Cell | None:
        return next((c for c in self.cells if c.tests_of == tests_of and c.state == state), None)

    @property
    def not_run(self) -> list[Cell]:
        return [c for c in self.cells if c.outcome == "not run"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "participants": list(self.participants),
            "tests": {str(p): list(ids) for p, ids in self.tests.items()},
            "cells": [c.as_dict() for c in self.cells],
            "stopped": self.stopped,
        }

    @classmethod
    def from_dict(cls, data: Any) -> DifferentialMatrix | None:
        """The matrix a verdict stored (its raw's "differential"), or None when there is none."""
        if not isinstance(data, dict):
            return None
        participants = tuple(p for p in (_participant(x) for x in data.get("participants") or ()) if p is not None)
        cells = [c for c in (Cell.from_dict(x) for x in data.get("cells") or ()) if c is not None]
        tests: dict[Participant, tuple[str, ...]] = {}
        for key, ids in (data.get("tests") or {}).items() if isinstance(data.get("tests"), dict) else ():
            who = _participant(key)
            if who is not None and isinstance(ids, list):
                tests[who] = tuple(str(t) for t in ids)[:MAX_TESTS]
        return cls(participants=participants, cells=cells, tests=tests, stopped=str(data.get("stopped") or "")[:500])

    def sentences(self, name: Callable[[int], str] = lambda i: f"#{i}") -> list[Sentence]:
        """Each divergence in words, in the matrix's order; `name` names a rollout as the
        reader knows it ("#3")."""
        return [Sentence(c.describe(name), c.check, c.cited_on) for c in self.cells if c.outcome in ("fail", "error")]

    def standing(self, rollout: int) -> Standing:
        """How `rollout` stands with the other passing rollouts and the task's reference."""
        peers = [p for p in self.participants if p != GOLD and p != rollout]
        failed = {(c.tests_of, c.state) for c in self.cells if c.outcome == "fail"}
        ran = {(c.tests_of, c.state) for c in self.cells if c.outcome in ("pass", "fail")}
        caught_by, caught, agree, disagree = [], [], [], []
        for peer in peers:
            theirs_fail, mine_fail = (peer, rollout) in failed, (rollout, peer) in failed
            if theirs_fail and not mine_fail:
                caught_by.append(peer)
            if mine_fail and not theirs_fail:
                caught.append(peer)
            if theirs_fail or mine_fail:
                disagree.append(peer)
            elif (peer, rollout) in ran or (rollout, peer) in ran:
                agree.append(peer)
        mine = [c for c in self.cells if c.outcome == "fail" and c.cited_on == rollout]
        reference = [c for c in mine if GOLD in (c.tests_of, c.state)]
        cited = [c for c in mine if GOLD not in (c.tests_of, c.state)]
        return Standing(tuple(caught_by), tuple(caught), tuple(agree), tuple(disagree), tuple(reference), tuple(cited))

    def for_model(self, name: Callable[[int], str] = lambda i: f"#{i}") -> dict[str, Any]:
        """The matrix as the LLM grader's tool result: each cell with how to cite it."""
        return {
            "about": "Each passing rollout's added tests (and the task's test patch, as 'gold') were run on the other "
            "passing rollouts' patches and on the gold patch, one sandboxed check a cell. A test that fails on another "
            "patch shows the two behave differently; judge which behaviour the task asks for.",
            "tests_added": {str(p): list(ids) for p, ids in self.tests.items()},
            "cells": [
                {
                    "tests_of": c.tests_of,
                    "on_patch_of": c.state,
                    "outcome": c.outcome,
                    **(
                        {"check": c.check, "cite_as": f"kind check, rollout {c.cited_on}, locator {c.check}"}
                        if c.check is not None
                        else {}
                    ),
                    **({"why": c.why} if c.why else {}),
                }
                for c in self.cells
            ],
            "divergences": [s.text for s in self.sentences(name)],
            **({"stopped": self.stopped} if self.stopped else {}),
        }


def _participant(value: Any) -> Participant | None:
    if value == GOLD:
        return GOLD
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
        return int(value)
    return None


# --- what a patch adds to the tests -----------------------------------------------------


def _is_python_test(path: str) -> bool:
    return path.endswith(".py") and is_test_path(path)


def _test_spans(source: str) -> list[tuple[str, int, int]]:
    """(test id suffix, first line, last line) of each test function of a Python file: module
    level `test*` functions and `test*` methods of `Test*` classes. [] when it does not parse."""
    if len(source) > MAX_SOURCE_CHARS:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    spans = []

    def span(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, int]:
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        return first, node.end_lineno or node.lineno

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            spans.append((node.name, *span(node)))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name.startswith("test"):
                    spans.append((f"{node.name}::{item.name}", *span(item)))
    return spans


def added_tests(patch: str | ParsedPatch, text_of: Callable[[str], str | None]) -> AddedTests:
    """The Python test files `patch` adds or changes and the test functions in them it touches
    (an added or changed line inside one; every test of a file it adds). `text_of(path)` is the
    file as the patch leaves it (None when it cannot be read: then only `def test…` lines the
    patch adds at the top level are found)."""
    parsed = patch if isinstance(patch, ParsedPatch) else parse_patch(patch, render=False)
    files: list[str] = []
    ids: list[str] = []
    for file in parsed.files:
        if file.status in ("removed", "binary") or not _is_python_test(file.path):
            continue
        files.append(file.path)
        rows = [row for hunk in file.hunks for row in hunk.unified if row.kind == "added" and row.new_no is not None]
        changed = {row.new_no for row in rows}
        text = text_of(file.path)
        spans = _test_spans(text) if text is not None else []
        if spans:
            ids += [f"{file.path}::{name}" for name, first, last in spans if any(first <= n <= last for n in changed if n)]
            continue
        for row in rows:  # the file cannot be read or parsed: top-level definitions the patch adds
            line = row.text
            for prefix in ("def ", "async def "):
                if line.startswith(prefix + "test"):
                    name = line[len(prefix) :].partition("(")[0].strip()
                    if name.isidentifier():
                        ids.append(f"{file.path}::{name}")
    return AddedTests(files=tuple(dict.fromkeys(files)), ids=tuple(dict.fromkeys(ids))[:MAX_TESTS])


# --- the command a cell runs -------------------------------------------------------------


def cell_command(label: str, files: Sequence[tuple[str, bytes]], ids: Sequence[str]) -> str:
    """The shell command of one cell: the test files written over the state's copy (as base64, so
    no byte of them is shell syntax), then the test ids run with pytest where the state's Python
    has it, else with RUNNER. `label` (our text, one line) opens it as a comment."""
    lines = [f"# {label}", "set -e"]
    for path, data in files:
        folder = path.rpartition("/")[0]
        if folder:
            lines.append(f"mkdir -p {shlex.quote(folder)}")
        lines.append(f"printf %s {base64.b64encode(data).decode()} | base64 -d > {shlex.quote(path)}")
    quoted = " ".join(shlex.quote(i) for i in ids)
    lines.append("set +e")
    lines.append(
        "if python3 -c 'import pytest' 2>/dev/null; then python3 -m pytest -q -p no:cacheprovider "
        f"{quoted}; else python3 -c {shlex.quote(RUNNER)} {quoted}; fi"
    )
    return "\n".join(lines)


def outcome_of(exit_status: int | None) -> Outcome:
    """pytest's (and RUNNER's) statuses: 0 passed, 1 a test failed, anything else could not run."""
    if exit_status == 0:
        return "pass"
    if exit_status == 1:
        return "fail"
    return "error"


# --- running it ---------------------------------------------------------------------------


def pairs(participants: Sequence[Participant], with_tests: Iterable[Participant]) -> list[tuple[Participant, Participant]]:
    """(tests of, state) of every cell, in the order they run: each pair of rollouts both ways
    first (by index), then the gold patch's tests on each rollout and each rollout's tests on
    the gold patch. Only participants with added tests have a row."""
    rows = set(with_tests)
    rollouts = sorted(p for p in participants if p != GOLD)
    order: list[tuple[Participant, Participant]] = []
    for n, a in enumerate(rollouts):
        for b in rollouts[n + 1 :]:
            order += [(x, y) for x, y in ((a, b), (b, a)) if x in rows]
    if GOLD in participants:
        for r in rollouts:
            order += [(x, y) for x, y in ((GOLD, r), (r, GOLD)) if x in rows]
    return order


def _name(p: Participant) -> str:
    return "the gold patch" if p == GOLD else f"rollout {p}"


def run_matrix(workspace: GroupWorkspace, *, reserve: int = 0) -> DifferentialMatrix | None:
    """The group's differential matrix, run once a workspace (later calls return it); None where
    checks are off or the group has no repository. At most the checks left but `reserve` run
    (what the model keeps for its own questions); the cells past that, or past the deadline,
    are recorded as not run."""
    if isinstance(workspace.differential, DifferentialMatrix):
        return workspace.differential
    view = workspace.repo_view
    if workspace.checks is None or view is None:
        return None
    passing = [r.index for r in workspace.passing]
    reference = workspace.reference_view
    has_gold = reference is not None and bool(workspace.gold_patch.strip())
    participants: tuple[Participant, ...] = (*passing, *((GOLD,) if has_gold else ()))

    def reader(source: RepoView, at: At) -> Callable[[str], str | None]:
        def text_of(path: str) -> str | None:
            try:
                return source.read(at, path).decode("utf-8", "replace")
            except RepoError:
                return None

        return text_of

    tests: dict[Participant, AddedTests] = {}
    for index in passing:
        tests[index] = added_tests(workspace.rollout(index).parsed_patch, reader(view, index))
    if has_gold and reference is not None and workspace.test_patch.strip():
        tests[GOLD] = added_tests(workspace.test_patch, reader(reference, TEST_PATCH_STATE))
    matrix = DifferentialMatrix(participants=participants, tests={p: t.ids for p, t in tests.items() if t.ids})
    workspace.differential = matrix
    limit = len(workspace.check_log) + max(0, workspace.checks_left - reserve)
    for tests_of, state in pairs(participants, matrix.tests):
        added = tests[tests_of]
        cited_on = tests_of if state == GOLD else state
        if not isinstance(cited_on, int):  # pairs() never puts the gold tests on the gold state
            raise TypeError(f"a cell of the gold tests on the gold state: {tests_of!r}, {state!r}")
        cell = Cell(tests_of=tests_of, state=state, tests=added.ids, cited_on=cited_on)
        if matrix.stopped:
            matrix.cells.append(_not_run(cell, matrix.stopped))
            continue
        if len(workspace.check_log) >= limit:
            matrix.stopped = f"the check budget is spent ({workspace.checks.max_checks} checks per group)"
            matrix.cells.append(_not_run(cell, matrix.stopped))
            continue
        try:
            source = reference if tests_of == GOLD else view
            if source is None:
                raise RepoError("the reference repository is not available")
            at: At = TEST_PATCH_STATE if tests_of == GOLD else tests_of
            files = [(path, source.read(at, path)) for path in added.files]
        except RepoError as exc:
            matrix.cells.append(_not_run(cell, f"{_name(tests_of)}'s test files cannot be read: {exc}"))
            continue
        if sum(len(data) for _, data in files) > MAX_OVERLAY_BYTES:
            matrix.cells.append(_not_run(cell, f"{_name(tests_of)}'s test files are over {MAX_OVERLAY_BYTES:,} bytes"))
            continue
        state_view, state_at = (reference, GOLD_STATE) if state == GOLD else (view, state)
        try:
            if state_view is None:
                raise RepoError("the reference repository is not available")
            state_view.checkout(state_at)  # a patch that did not apply has no state: this cell only
        except RepoError as exc:
            matrix.cells.append(_not_run(cell, str(exc)))
            continue
        # No rollout index in the command: a reviewer who meets rollouts by lane label reads it
        label = (
            "gagar differential: "
            + ("the task's tests" if tests_of == GOLD else "a rollout's added tests")
            + (" on the gold patch" if state == GOLD else " on another rollout's patch")
        )
        try:
            record = run_sandboxed(workspace, state_view, state_at, cited_on, cell_command(label, files, added.ids))
        except ToolError as exc:  # the budget, the deadline or the sandbox: no later cell can run either
            matrix.stopped = str(exc)
            matrix.cells.append(_not_run(cell, matrix.stopped))
            continue
        matrix.cells.append(_ran(cell, record))
    return matrix


def _ran(cell: Cell, record: CheckRecord) -> Cell:
    if record.exit_status is None:
        why = f"stopped by the sandbox: {record.killed}"
    else:
        why = "" if record.exit_status in (0, 1) else f"exit status {record.exit_status}"
    return Cell(cell.tests_of, cell.state, cell.tests, outcome_of(record.exit_status), record.number, cell.cited_on, why)


def _not_run(cell: Cell, why: str) -> Cell:
    return Cell(cell.tests_of, cell.state, cell.tests, "not run", None, cell.cited_on, why)
