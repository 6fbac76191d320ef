"""What every importer shares: reading JSON that may be broken, verdicts, attempts. No Django.

An importer turns one foreign file into `Attempt`s: a `gagar-group/1` rollout (without its
index, which the import service assigns) plus the instance it belongs to. A file that
cannot be turned into attempts raises `SourceError` with a reason a user can act on.

>>> verdict_from_report({"resolved": True, "tests_status": {}}, ref="r.json").reward
1.0
>>> repo_of("scikit-learn__scikit-learn-14141")
'scikit-learn/scikit-learn'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

# Verdict names, as the SWE-bench harness's run summary spells its id lists.
RESOLVED = "resolved"
UNRESOLVED = "unresolved"
EMPTY_PATCH = "empty_patch"
ERROR = "error"

# Every pattern here runs on text an agent or a file wrote, so each takes time linear in its
# input: no nested or adjacent quantifiers over overlapping classes (benchmarks/importer_regex.py).
_REPO_CHARS = re.compile(r"[A-Za-z0-9_.-]+")
_PR_OPEN, _PR_CLOSE = "<pr_description>", "</pr_description>"
_PR_PREAMBLE = "Consider the following PR description:"
MB = 1024 * 1024
# A JSON file (trajectory, predictions, report) larger than this is skipped, named in the summary.
# Parsing holds the bytes, orjson's own copy of them and the objects: about 3x the file at worst.
MAX_JSON_BYTES = 128 * MB


class SourceError(ValueError):
    """A file that yields no rollouts; the message says why (shown next to its name)."""


def jsonl_lines(path: Path, *, limit: int | None = None) -> Iterator[tuple[int, int, bytes | None]]:
    """(line number, byte offset, bytes or None) for each non-blank line of a JSON Lines file, read one line at a time.

    A line longer than `limit` (default MAX_JSON_BYTES) is given as None and not held in memory;
    the file as a whole has no size limit (an OpenHands output.jsonl of a full benchmark is large).
    `read_line_at` reads a line again in pass 2.
    """
    limit = MAX_JSON_BYTES if limit is None else limit
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise SourceError(f"unreadable: {exc.strerror or exc}") from None
    with handle:
        number, offset = 0, 0
        while True:
            line = handle.readline(limit + 1)
            if not line:
                return
            number += 1
            start, offset = offset, offset + len(line)
            if len(line) > limit and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # skip the rest of the long line, a chunk at a time
                    line = handle.readline(limit + 1)
                    offset += len(line)
                yield number, start, None
                continue
            if line.strip():
                yield number, start, line


def read_line_at(path: Path, offset: int, *, limit: int | None = None) -> bytes:
    """The line starting at byte `offset` (as `jsonl_lines` found it)."""
    return read_lines_at(path, [offset], limit=limit)[0]


def read_lines_at(path: Path, offsets: list[int], *, limit: int | None = None) -> list[bytes]:
    """The lines starting at each of `offsets`, the file opened once."""
    limit = MAX_JSON_BYTES if limit is None else limit
    lines = []
    try:
        with path.open("rb") as handle:
            for offset in offsets:
                handle.seek(offset)
                lines.append(handle.readline(limit + 1))
    except OSError as exc:
        raise SourceError(f"unreadable: {exc.strerror or exc}") from None
    return lines


def size_refusal(path: Path, size: int, limit: int) -> str:
    """'<name> is N MB, over the M MB limit' (the name shown safely, whatever bytes it holds)."""
    return f"{safe_text(path.name)} is {size / MB:,.0f} MB, over the {limit / MB:,.0f} MB limit"


def read_bounded(path: Path, limit: int | None = None) -> bytes:
    """The file's bytes, read once; a file over `limit` (default MAX_JSON_BYTES) is refused before it is read."""
    limit = MAX_JSON_BYTES if limit is None else limit
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > limit:
                raise SourceError(size_refusal(path, size, limit))
            # read(n) allocates n bytes up front: ask for the size, one more to notice a file that grew
            data = handle.read(size + 1)
    except OSError as exc:
        raise SourceError(f"unreadable: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise SourceError(size_refusal(path, len(data), limit))
    return data


def load_json(path: Path, *, limit: int | None = None) -> Any:
    """Decode a JSON file of at most `limit` bytes; a broken one becomes a SourceError, not a crash.

    The bytes are read once and parsed by orjson in place (no decoded or stripped copy), so
    a file costs its size plus the objects it decodes to.
    """
    data = read_bounded(path, limit)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if not data or data.isspace():
            raise SourceError("empty file") from None
        raise SourceError(f"truncated or invalid JSON ({exc})") from None


def safe_text(value: str) -> str:
    """`value` as text any store accepts: undecodable bytes of a file name (surrogate escapes, as
    os.fsdecode gives them) become `\\xff`, other lone surrogates `\\udc00`, NUL becomes U+FFFD."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        try:
            value = os.fsencode(value).decode("utf-8", errors="backslashreplace")
        except UnicodeEncodeError:
            value = value.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return value.replace("\x00", "\ufffd")


def text_of(content: Any) -> str:
    """Message content as text: strings stay, OpenAI content parts are joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or part.get("content") or ""))
            elif part is not None:
                parts.append(str(part))
        return "\n".join(p for p in parts if p)
    return str(content)


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def repo_of(instance_id: str) -> str:
    """`owner__name-123` (SWE-bench's instance ids) -> `owner/name`; '' for other ids.

    The owner is everything before the first `__`, the name what lies between it and the
    last `-<digits>`. Parsed with str methods: linear in the id, however it was made.
    """
    if not _REPO_CHARS.fullmatch(instance_id):
        return ""
    head, dash, digits = instance_id.rpartition("-")
    if not dash or not digits.isdigit():
        return ""
    cut = head.find("__", 1)
    if cut == -1 or cut + 2 >= len(head):
        return ""
    return f"{head[:cut]}/{head[cut + 2 :]}"


def problem_statement_of(prompt: str) -> str:
    """The issue text inside the agents' `<pr_description>` prompt, or '' (never the whole prompt).

    The first `<pr_description>` up to the first `</pr_description>` after it, without the
    agents' "Consider the following PR description:" preamble. Found with str.find (linear:
    a regex with `\\s*(.*?)\\s*` between the tags took O(N^4) on N spaces and no closing tag).
    """
    prompt = prompt or ""
    start = prompt.find(_PR_OPEN)
    if start == -1:
        return ""
    start += len(_PR_OPEN)
    end = prompt.find(_PR_CLOSE, start)
    if end == -1:
        return ""
    inner = prompt[start:end].strip()
    if inner.startswith(_PR_PREAMBLE):
        inner = inner[len(_PR_PREAMBLE) :].strip()
    return inner


def is_empty_patch(patch: str | None) -> bool:
    return not (patch or "").strip()


def same_patch(a: str | None, b: str | None) -> bool:
    return (a or "").strip() == (b or "").strip()


@dataclass(frozen=True)
class ImportedVerdict:
    """The SWE-bench harness's word on one instance of one run."""

    status: str  # RESOLVED, UNRESOLVED, EMPTY_PATCH or ERROR
    source: str  # "report" (per-instance report.json) or "summary" (run summary ids)
    ref: str  # the file it came from
    tests: dict[str, Any] | None = None
    test_log: str = ""
    rule: str = ""  # which rule of the source decided, in words (older harness reports, trainer scores)

    @property
    def reward(self) -> float:
        # The harness counts empty patches and evaluation errors as unresolved.
        return 1.0 if self.status == RESOLVED else 0.0


def _tests_of(report: dict[str, Any]) -> dict[str, Any] | None:
    status = report.get("tests_status")
    if not isinstance(status, dict):
        return None
    tests = {}
    for category, outcome in status.items():
        if isinstance(outcome, dict):
            tests[str(category)] = {
                "success": [str(t) for t in as_list(outcome.get("success"))],
                "failure": [str(t) for t in as_list(outcome.get("failure"))],
            }
    return tests


def is_bare_report(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("resolved"), bool)


def verdict_from_report(report: dict[str, Any], *, ref: str) -> ImportedVerdict:
    """One instance's report.json body (`resolved`, `tests_status`, ...)."""
    if report.get("resolved") is True:
        status = RESOLVED
    elif report.get("patch_is_None") is True or report.get("patch_exists") is False:
        status = EMPTY_PATCH
    else:
        status = UNRESOLVED
    return ImportedVerdict(status=status, source="report", ref=ref, tests=_tests_of(report))


def verdicts_from_report_file(obj: Any, *, instance_hint: str | None, ref: str) -> dict[str, ImportedVerdict]:
    """report.json is keyed `{instance_id: {...}}` or the bare object (then the folder names the instance)."""
    if is_bare_report(obj):
        if not instance_hint:
            raise SourceError("a bare report (no instance id key) outside a folder named after its instance")
        return {instance_hint: verdict_from_report(obj, ref=ref)}
    if isinstance(obj, dict):
        out = {str(k): verdict_from_report(v, ref=ref) for k, v in obj.items() if is_bare_report(v)}
        if out:
            return out
    raise SourceError("not a SWE-bench report (no 'resolved' verdict)")


SUMMARY_LISTS = (
    ("error_ids", ERROR),
    ("empty_patch_ids", EMPTY_PATCH),
    ("unresolved_ids", UNRESOLVED),
    ("resolved_ids", RESOLVED),
)


_OLD_REPORT_KEYS = ("stats", "resolved_per_project", "generated", "applied", "with_logs", "no_generation")


def is_old_report(obj: Any) -> bool:
    """The pre-2024 harness's `final_report.json` / `results.json`: a `resolved` id list beside its
    `stats`, `resolved_per_project` or the `generated` / `applied` lists."""
    return isinstance(obj, dict) and isinstance(obj.get("resolved"), list) and any(key in obj for key in _OLD_REPORT_KEYS)


def is_run_summary(obj: Any) -> bool:
    return isinstance(obj, dict) and any(isinstance(obj.get(key), list) for key in ("resolved_ids", "unresolved_ids"))


def verdicts_from_summary(obj: dict[str, Any], *, ref: str) -> dict[str, ImportedVerdict]:
    """The harness's run summary `<model>.<run_id>.json`: resolved / unresolved / empty patch / error ids.

    Later lists win, so an id listed as resolved is resolved whatever else names it.
    Ids only in `incomplete_ids` were never evaluated: they get no verdict.
    """
    out: dict[str, ImportedVerdict] = {}
    for key, status in SUMMARY_LISTS:
        for instance_id in as_list(obj.get(key)):
            if isinstance(instance_id, str):
                out[instance_id] = ImportedVerdict(status=status, source="summary", ref=ref)
    return out


@dataclass
class Attempt:
    """One rollout found in a file, before the import service gives it an index."""

    instance_id: str
    ref: str  # stable: "<PATH name>/<relative path>[#attempt-n | #instance]"
    format: str
    patch: str
    messages: list[Any]
    exit_status: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    problem_statement: str = ""
    evaluated_patch: str | None = None  # the patch the harness scored, when the file says which
    verdict_ambiguous: bool = False  # several attempts and no way to tell which one was scored
    unfinished: bool = False  # no exit status and no submission: the agent never finished
    own_verdict: ImportedVerdict | None = None  # the file's own word on this attempt (OpenHands test_result.report, verl score)
    task: dict[str, Any] = field(
        default_factory=dict
    )  # gagar-group/1 task fields the file states (repo, base_commit, FAIL_TO_PASS, ...)
    step: int | None = None  # the step the file places this attempt at (verl dumps); None: the import's step

    def rollout(self, *, verdict: ImportedVerdict | None, reward_note: str = "") -> dict[str, Any]:
        """The `gagar-group/1` rollout (no index yet). Deterministic: the same file gives the same dict."""
        metadata = dict(self.metadata)
        if verdict is not None:
            reward: float | None = verdict.reward
            metadata["verdict"] = {"status": verdict.status, "source": verdict.source, "ref": verdict.ref}
            if verdict.rule:
                metadata["verdict"]["rule"] = verdict.rule
        elif is_empty_patch(self.patch):
            reward = 0.0  # nothing to apply: the harness fails an empty patch
            metadata["verdict"] = {"status": EMPTY_PATCH, "source": "empty patch"}
        else:
            reward = None
            metadata["verdict"] = {"status": "unknown", "source": reward_note or "no verdict"}
        rollout: dict[str, Any] = {
            "reward": reward,
            "patch": self.patch,
            "messages": self.messages,
            "exit_status": self.exit_status,
            "stats": {k: v for k, v in self.stats.items() if v is not None},
            "source": {"format": self.format, "ref": self.ref},
            "metadata": metadata,
        }
        if verdict is not None and verdict.tests is not None:
            rollout["tests"] = verdict.tests
        if verdict is not None and verdict.test_log:
            rollout["test_log"] = verdict.test_log
        return rollout
