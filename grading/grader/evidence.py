"""Resolve a grader's evidence citations against the stored group. Pure: no Django.

A citation resolves when what it names exists: a patch line on the new side of one of
the rollout's files ("path:line"), a message of its trajectory (its index), a test of
its outcomes (a test id, or "log:line" of its test log), a line of a file in the
repository at the base commit or at a rollout's state ("file", "<rollout|base>:path:line"),
or a check the grader ran on the rollout ("check", its number). Negative judgments — a tier
below T1, a score at or below LOW_SCORE, a cheat flag (`needs_citation()`) — need at least
one citation that resolves; `problems()` lists what is missing, which is what a grader is
re-asked with. A verdict posted by a grader that runs elsewhere may leave a negative judgment
without any citation (`find_problems(..., citations_required=False)`): it is stored marked
*uncited* (`is_uncited()`, `RolloutGrade.uncited`), never one of ours; a citation it does give
must still resolve.

>>> needs_citation("T2", False, {}), needs_citation("T1", False, {"minimality": 2})
(True, True)
>>> is_uncited("T2", False, {}, []), is_uncited("T2", False, {}, [{"kind": "turn"}]), is_uncited("T1", False, {}, [])
(True, False, False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from grading.formats.params import MAX_ID, ParamError, whole
from grading.grader.base import EVIDENCE_KINDS, Evidence, RolloutJudgment
from grading.grader.workspace import GroupWorkspace
from grading.method.guide import LOW_SCORE, RUBRIC, SCORE_RANGE
from grading.method.tiers import TIERS
from grading.repos.types import BASE, At, RepoError


def _number(text: str) -> int | None:
    """The whole number a locator names (ASCII digits only), else None.

    A grader (an LLM) writes these: '²' passes `str.isdigit()` and then fails `int()`, and
    thousands of digits fail `int()` too; either must be an unresolved citation, not an error.
    """
    try:
        return whole(text, "locator", maximum=MAX_ID)
    except ParamError:
        return None


CITATION_NEEDED = "a tier below T1, a low score or a cheat flag needs at least one citation that resolves"


def needs_citation(tier: str, cheat: bool, scores: Mapping[str, object]) -> bool:
    """Whether a judgment speaks against its rollout: a tier below T1, a cheat flag or a rubric
    score at or below LOW_SCORE. Our graders must back such a judgment with a citation."""
    return tier in ("T2", "T3") or bool(cheat) or any(isinstance(s, int) and s <= LOW_SCORE for s in scores.values())


def is_uncited(tier: str, cheat: bool, scores: Mapping[str, object], evidence: Sequence[object]) -> bool:
    """A judgment that needs a citation and gives none: refused from our graders (problems()),
    stored and marked from a grader that runs elsewhere (RolloutGrade.uncited). One that gives
    citations is not uncited: each of them must resolve, or the verdict is refused."""
    return not evidence and needs_citation(tier, cheat, scores)


@dataclass(frozen=True)
class Problem:
    """What is wrong with a verdict, and where: `judgment` is the position of the judgment in
    the submitted list and `citation` of the citation in its evidence (None: the verdict as a
    whole, or the judgment as a whole)."""

    text: str
    judgment: int | None = None
    citation: int | None = None

    @property
    def field(self) -> str:
        """Where in the submitted verdict: "judgments", "judgments[1]", "judgments[1].evidence[0]"."""
        if self.judgment is None:
            return "judgments"
        where = f"judgments[{self.judgment}]"
        return where if self.citation is None else f"{where}.evidence[{self.citation}]"


# What one check of a verdict has read of the repository: (state, path) -> its line count, or
# why it cannot be read. Citations of the same file then cost one read (a git process or two).
FileLines = dict[tuple[At, str], int | str]


def resolve(workspace: GroupWorkspace, item: Evidence, *, reads: FileLines | None = None) -> str | None:
    """None when the citation resolves, else why not. `reads` keeps the files read for the
    next citation (problems() passes one for a whole verdict)."""
    if item.kind not in EVIDENCE_KINDS:
        return f"evidence kind {item.kind!r} is not one of {', '.join(EVIDENCE_KINDS)}"
    try:
        rollout = workspace.rollout(item.rollout)
    except KeyError:
        return f"rollout {item.rollout} does not exist in this group"
    locator = str(item.locator).strip()
    if item.kind == "turn":
        turn = _number(locator)
        if turn is None or turn >= len(rollout.messages):
            return f"rollout {item.rollout} has no turn {locator!r} (it has {len(rollout.messages)} messages, 0-based)"
        return None
    if item.kind == "patch":
        path, _, line = locator.rpartition(":")
        line_no = _number(line)
        if not path or line_no is None:
            return f"patch locator {locator!r} must be 'path:line'"
        for file in rollout.parsed_patch.files:
            if file.path == path:
                if any(row.new_no == line_no for hunk in file.hunks for row in hunk.unified):
                    return None
                return f"rollout {item.rollout}'s patch does not show line {line} of {path}"
        return f"rollout {item.rollout}'s patch does not touch {path!r}"
    if item.kind == "file":
        return _resolve_file(workspace, locator, {} if reads is None else reads)
    if item.kind == "check":
        check_no = _number(locator.removeprefix("check:"))
        check = workspace.check(check_no) if check_no is not None else None
        if check is None:
            return f"no check {locator!r} was run on this group (checks are numbered from 1 as they run)"
        if check.rollout != item.rollout:
            return f"check {check_no} ran on rollout {check.rollout}, not rollout {item.rollout}"
        return None
    # test
    if locator.startswith("log:"):
        number = locator[4:]
        lines = rollout.test_log.count("\n") + 1 if rollout.test_log else 0
        log_line = _number(number)
        if log_line is None or not 1 <= log_line <= lines:
            return f"rollout {item.rollout}'s test log has no line {number!r} (it has {lines})"
        return None
    for outcome in rollout.tests.values():
        if isinstance(outcome, dict) and any(locator in (outcome.get(k) or []) for k in ("success", "failure")):
            return None
    return f"rollout {item.rollout} has no test {locator!r}"


def split_file_locator(locator: str) -> tuple[At, str, int] | None:
    """(state, path, line) of a file locator "<rollout|base>:<path>:<line>", else None."""
    state, _, rest = locator.partition(":")
    path, _, line = rest.rpartition(":")
    line_no = _number(line)
    if not path or line_no is None or line_no < 1:
        return None
    if state == BASE:
        return BASE, path, line_no
    index = _number(state)
    return None if index is None else (index, path, line_no)


def _resolve_file(workspace: GroupWorkspace, locator: str, reads: FileLines) -> str | None:
    parts = split_file_locator(locator)
    if parts is None:
        return f"file locator {locator!r} must be '<rollout|base>:<path>:<line>'"
    at, path, line = parts
    if workspace.repo_view is None:
        return "this group has no repository to cite"
    if at != BASE and not any(r.index == at for r in workspace.rollouts):
        return f"rollout {at} does not exist in this group"
    if (at, path) not in reads:
        try:
            data = workspace.repo_view.read(at, path)
        except RepoError as exc:
            reads[at, path] = f"{path!r} at {at}: {exc}"
        else:
            reads[at, path] = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    lines = reads[at, path]
    if isinstance(lines, str):
        return lines
    if not 1 <= line <= max(lines, 1):
        return f"{path!r} at {at} has no line {line} (it has {lines})"
    return None


def problems(workspace: GroupWorkspace, judgments: list[RolloutJudgment]) -> list[str]:
    """Everything wrong with a set of judgments from one of our graders; empty means the
    verdict is valid. Every negative judgment must cite (find_problems)."""
    return [p.text for p in find_problems(workspace, judgments)]


def find_problems(
    workspace: GroupWorkspace, judgments: list[RolloutJudgment], *, citations_required: bool = True
) -> list[Problem]:
    """Everything wrong with a set of judgments, each with where it is; empty means valid.
    Without `citations_required` (a verdict posted by a grader that runs elsewhere) a negative
    judgment may give no citation at all (is_uncited); any citation given must resolve.

    Each distinct citation is resolved once, and each file it cites read once: a "file"
    citation reads the repository (git processes), so a verdict citing one file many times
    must not cost that many reads."""
    errors: list[Problem] = []
    resolved: dict[tuple[str, object, str], str | None] = {}
    reads: FileLines = {}

    def why_not(item: Evidence) -> str | None:
        key = (item.kind, item.rollout, str(item.locator))
        if key not in resolved:
            resolved[key] = resolve(workspace, item, reads=reads)
        return resolved[key]

    passing = {r.index for r in workspace.passing}
    judged = [j.index for j in judgments]
    missing = sorted(passing - set(judged))
    if missing:
        errors.append(Problem(f"no judgment for passing rollout(s) {missing}"))
    extra = sorted(set(judged) - passing)
    if extra:
        errors.append(Problem(f"rollout(s) {extra} did not pass; judge only passing rollouts"))
    if len(judged) != len(set(judged)):
        errors.append(Problem("a rollout is judged more than once"))
    for at, j in enumerate(judgments):
        where = f"rollout {j.index}"
        if j.tier not in TIERS:
            errors.append(Problem(f"{where}: tier must be one of {', '.join(TIERS)}", at))
        if not isinstance(j.rank, int) or j.rank < 1 or j.rank > max(1, len(passing)):
            errors.append(Problem(f"{where}: rank must be an integer from 1 to {max(1, len(passing))}", at))
        for name, score in j.scores.items():
            if name not in RUBRIC:
                errors.append(Problem(f"{where}: unknown rubric dimension {name!r}", at))
            elif not isinstance(score, int) or not SCORE_RANGE[0] <= score <= SCORE_RANGE[1]:
                errors.append(Problem(f"{where}: {name} must be an integer {SCORE_RANGE[0]}..{SCORE_RANGE[1]}", at))
        outcomes = [why_not(e) for e in j.evidence]
        errors.extend(
            Problem(f"{where}: citation {e.kind} {e.locator!r}: {why}", at, k)
            for k, (e, why) in enumerate(zip(j.evidence, outcomes))
            if why
        )
        if citations_required and needs_citation(j.tier, j.cheat, j.scores) and all(outcomes):
            errors.append(Problem(f"{where}: {CITATION_NEEDED}", at))
    return errors
