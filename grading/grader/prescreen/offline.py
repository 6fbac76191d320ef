"""The scanners over files, before anything is imported: `manage.py scan`. Pure: no Django, no database.

`scan(paths)` reads what an import would read — `gagar-group/1` JSON Lines (``.jsonl``,
``.jsonl.gz``) and every run folder or file the importers know (grading.ingest.importers.scan:
mini-swe-agent run folders, SWE-agent ``.traj``, SWE-bench predictions, OpenHands
``output.jsonl``, verl dumps) — screens each rollout as the server does after an import
(`screen_rollout` with the group's `Task`), and yields each `Finding` and each `BadInput` as it
comes. Memory stays at one group: group lines are streamed one at a time, importer files are
read one instance at a time.

The task a rollout is screened against is the line's own (repository, base commit, gold and
test patches, FAIL_TO_PASS / PASS_TO_PASS) or what the importer finds in the files (the
instance's data, the repository named by a SWE-bench instance id), as an import would store
it. A field a line leaves out is taken from an earlier line of the same task, as the stored
task would supply it (a trainer states a task's fields once, not at every step).

>>> line = (b'{"format": "gagar-group/1", "run": "r", "step": 3, "uid": "u@3",'
...         b' "task": {"instance_id": "t", "repo": "acme/widget"}, "rollouts": [{"index": 0, "reward": 1,'
...         b' "messages": [{"role": "assistant", "content": "```bash\\\\ngit log --all --oneline\\\\n```"}]}]}')
>>> [(s.signal, s.rollout, s.turn, s.cheat) for s in screen_group_line(line)]
[('history_search', 0, 0, True)]
>>> print(encode({"detail": "\\x1b[2J\\u202e evil"}))
{"detail": "\\u001b[2J\\u202e evil"}
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading.formats.groupline import LineError, ParsedGroup, ParsedRollout, parse_group_line
from grading.formats.linereader import BodyError, OversizeLine, iter_lines, open_body
from grading.grader.prescreen import screen_rollout
from grading.grader.prescreen.signals import Signal, Task
from grading.grader.workspace import RolloutView
from grading.ingest.importers.common import MAX_JSON_BYTES
from grading.ingest.importers.scan import SKIPPED, FoundAttempt, GroupFile, RunFinder, Source

MAX_TASKS_REMEMBERED = 4096  # tasks whose fields later lines may leave out; the oldest is forgotten past it
_TASK_FIELDS = ("repo", "base_commit", "gold_patch", "test_patch", "fail_to_pass", "pass_to_pass")


@dataclass(frozen=True)
class Finding:
    """One signal of one rollout, and where the rollout was read."""

    path: str  # the PATH as given
    source: str  # the file, relative to the PATH (a file PATH: its name)
    line: int | None  # the line of the file that holds the rollout, when one does
    group: str  # the group line's uid, or the instance id (a verl group: its uid)
    signal: Signal

    def as_dict(self) -> dict[str, Any]:
        s = self.signal
        return {
            "path": self.path,
            "source": self.source,
            "line": self.line,
            "group": self.group,
            "rollout": s.rollout,
            "signal": s.signal,
            "category": s.category,
            "scanner": s.scanner,
            "cheat": s.cheat,
            "detail": s.detail,
            "tests": list(s.tests),
            "evidence": s.evidence.as_dict() if s.evidence else None,
        }


@dataclass(frozen=True)
class BadInput:
    """Input that could not be read or scanned: a PATH that does not exist, a file no importer
    takes, a line that is not a valid group line, a rollout a scanner failed on."""

    path: str  # the PATH as given
    source: str  # the file, relative to the PATH ("" or the PATH itself: the PATH)
    line: int | None
    reason: str

    @property
    def where(self) -> str:
        """The file as the user can open it: the PATH, or the PATH joined with the file inside it."""
        if not self.source or self.source == self.path:
            return self.path
        base = Path(self.path)
        return self.path if base.name == self.source and not base.is_dir() else (base / self.source).as_posix()

    def __str__(self) -> str:
        return f"{self.where}: line {self.line}: {self.reason}" if self.line is not None else f"{self.where}: {self.reason}"


def inert(text: str) -> str:
    """`text` with every character that is not printable (controls, escape sequences, bidi
    overrides, line separators) written as a \\u escape, for a message on a terminal.

    >>> print(inert("bad\\x1b[31m name\\u202e.txt: line 2"))
    bad\\u001b[31m name\\u202e.txt: line 2
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}" for c in text)


def encode(value: Any) -> str:
    """One JSON line that stays inert on a terminal: every character outside printable ASCII
    (escape sequences, C1 controls, bidi overrides, DEL) written as a \\u escape."""
    return json.dumps(value, ensure_ascii=True).replace("\x7f", "\\u007f")


class _Tasks:
    """The task fields seen so far per instance id (at most MAX_TASKS_REMEMBERED tasks)."""

    def __init__(self) -> None:
        self._known: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def task(self, instance_id: str, stated: dict[str, Any], *, future_history: bool) -> Task:
        known = self._known.pop(instance_id, {})
        for key in _TASK_FIELDS:
            if stated.get(key) and not known.get(key):
                known[key] = stated[key]
        self._known[instance_id] = known
        if len(self._known) > MAX_TASKS_REMEMBERED:
            self._known.popitem(last=False)
        merged = {**known, **{k: v for k, v in stated.items() if k in _TASK_FIELDS and v}}
        return Task(
            repo=merged.get("repo", ""),
            base_commit=merged.get("base_commit", ""),
            gold_patch=merged.get("gold_patch", ""),
            test_patch=merged.get("test_patch", ""),
            fail_to_pass=tuple(merged.get("fail_to_pass", ())),
            pass_to_pass=tuple(merged.get("pass_to_pass", ())),
            future_history=future_history,
        )


def _view(rollout: ParsedRollout) -> RolloutView:
    return RolloutView(
        index=rollout.index,
        passed=rollout.passed,
        patch=rollout.patch,
        messages=rollout.messages,
        tests=rollout.tests,
        test_log=rollout.test_log,
        exit_status=rollout.exit_status,
        stats=rollout.stats,
    )


def _imported_view(index: int, rollout: dict[str, Any]) -> RolloutView:
    reward = rollout.get("reward")
    return RolloutView(
        index=index,
        passed=None if reward is None else reward == 1.0,
        patch=rollout.get("patch") or "",
        messages=rollout.get("messages") or [],
        tests=rollout.get("tests") or {},
        test_log=rollout.get("test_log") or "",
        exit_status=rollout.get("exit_status") or "",
        stats=rollout.get("stats") or {},
    )


def screen_group_line(raw: bytes, *, future_history: bool = False) -> list[Signal]:
    """Every signal of the rollouts of one group line (raises LineError for a line ingest would refuse)."""
    group = parse_group_line(raw)
    task = _Tasks().task(group.task.instance_id, group.task.fields, future_history=future_history)
    return [s for rollout in group.rollouts for s in screen_rollout(_view(rollout), task=task)]


class Scanner:
    """`scan` with its counts: `groups` and `rollouts` screened so far."""

    def __init__(self, *, future_history: bool = False, max_line_bytes: int = MAX_JSON_BYTES) -> None:
        self.future_history = future_history
        self.max_line_bytes = max_line_bytes
        self.tasks = _Tasks()
        self.groups = 0
        self.rollouts = 0

    def scan(self, paths: Sequence[str]) -> Iterator[Finding | BadInput]:
        for given in paths:
            yield from self.path(given)

    def _screen(
        self, view: RolloutView, task: Task, *, path: str, source: str, line: int | None, group: str
    ) -> Iterator[Finding | BadInput]:
        self.rollouts += 1
        try:
            signals = screen_rollout(view, task=task)
        except Exception as exc:  # noqa: BLE001  a rollout a scanner cannot read is reported, and the others are scanned
            what = f"the scanners failed on rollout {view.index} of group {group!r}: {exc.__class__.__name__}: {exc}"
            yield BadInput(path, source, line, what)
            return
        for signal in signals:
            yield Finding(path, source, line, group, signal)

    def path(self, given: str) -> Iterator[Finding | BadInput]:
        """One PATH; a PATH that holds nothing to scan (a mistyped folder, only logs) is bad input."""
        finder = RunFinder([Source(Path(given), label="", shown=given)])
        seen, rollouts, refusals = 0, self.rollouts, 0

        def refused() -> Iterator[BadInput]:
            nonlocal seen, refusals
            for item in finder.findings[seen:]:
                if item.kind == SKIPPED:
                    refusals += 1
                    yield BadInput(given, item.ref, None, item.reason)
            seen = len(finder.findings)

        finder.scan()
        yield from refused()
        for key in finder.instance_ids:
            found = finder.attempts(key)
            yield from refused()
            if found:
                yield from self._instance(given, finder, key, found)
        for file in finder.group_files:
            for item in self._group_file(given, file):
                refusals += isinstance(item, BadInput)
                yield item
        if self.rollouts == rollouts and not refusals:
            yield BadInput(given, given, None, "nothing to scan: no group lines, trajectories, predictions or rollout dumps")

    def _instance(self, given: str, finder: RunFinder, key: str, found: list[FoundAttempt]) -> Iterator[Finding | BadInput]:
        instance_id, step, stem = finder.group_of(key)
        group = stem if step is None else f"{stem}@{step}"  # verl names its steps; an import gives the others theirs
        stated = {name.lower(): value for name, value in RunFinder.task_fields(instance_id, found).items()}
        task = self.tasks.task(instance_id, stated, future_history=self.future_history)
        self.groups += 1
        for index, item in enumerate(found):
            view = _imported_view(index, item.rollout)
            yield from self._screen(view, task, path=given, source=item.file_ref, line=item.line, group=group)

    def _group_file(self, given: str, file: GroupFile) -> Iterator[Finding | BadInput]:
        try:
            with file.path.open("rb") as handle:
                for number, raw in iter_lines(open_body(handle), max_line_bytes=self.max_line_bytes):
                    yield from self._group_line(given, file.ref, number, raw)
        except BodyError as exc:
            yield BadInput(given, file.ref, None, str(exc))
        except OSError as exc:
            yield BadInput(given, file.ref, None, f"unreadable: {exc.strerror or exc}")

    def _group_line(self, given: str, ref: str, number: int, raw: bytes | OversizeLine) -> Iterator[Finding | BadInput]:
        if isinstance(raw, OversizeLine):
            yield BadInput(given, ref, number, str(raw))
            return
        try:
            group: ParsedGroup = parse_group_line(raw)
        except LineError as exc:
            yield BadInput(given, ref, number, str(exc))
            return
        task = self.tasks.task(group.task.instance_id, group.task.fields, future_history=self.future_history)
        self.groups += 1
        for rollout in group.rollouts:
            yield from self._screen(_view(rollout), task, path=given, source=ref, line=number, group=group.uid)


def scan(
    paths: Sequence[str], *, future_history: bool = False, max_line_bytes: int = MAX_JSON_BYTES
) -> Iterator[Finding | BadInput]:
    """Findings and bad input of every PATH, in the order of the PATHs; within one, its agent runs
    (by instance id) and then its group lines (in file and line order).

    Each PATH is read on its own, as an import of that PATH alone into an empty run would read
    it: the rollouts of an instance are indexed 0, 1, … in the order of its files and attempts.
    `max_line_bytes` bounds a group line (the server's GAGAR_MAX_LINE_BYTES refuses longer ones).
    `future_history`: the benchmark's images hold history past the base (Task.future_history).
    """
    return Scanner(future_history=future_history, max_line_bytes=max_line_bytes).scan(paths)
