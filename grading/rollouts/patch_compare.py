"""Compare two patches file by file (an interdiff, as `git range-diff` shows one). Pure.

For every path either patch touches, the two patches' hunks for that path are diffed
line by line. A row's `kind` says where the line is: `same` (both patches have it),
`only_a`, `only_b`. Each row's `text` is the patch line itself (with its own +/-/space
prefix), so "+x = 1" only in B reads as "B adds x = 1 and A does not". Text is data:
templates escape it.

>>> a = "--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n x = 0\\n-y = 1\\n+y = 2\\n"
>>> b = "--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n x = 0\\n-y = 1\\n+y = 3\\n"
>>> c = compare_patches(a, b)
>>> [(f.path, f.status) for f in c]
[('m.py', 'differs')]
>>> [(r.kind, r.text) for r in c[0].rows if r.kind.startswith("only")]
[('only_a', '+y = 2'), ('only_b', '+y = 3')]
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

_FILE_HEADER = re.compile(r"^(?:diff --git |--- )")
_PATH = re.compile(r"^\+\+\+ (?:b/)?(.*?)(?:\t.*)?$")
_OLD_PATH = re.compile(r"^--- (?:a/)?(.*?)(?:\t.*)?$")
MAX_ROWS_PER_FILE = 4000


@dataclass(frozen=True)
class CompareRow:
    kind: str  # same | only_a | only_b | gap
    text: str


@dataclass
class FileComparison:
    path: str
    status: str  # identical | differs | only_a | only_b
    rows: list[CompareRow] = field(default_factory=list)
    truncated: bool = False


def split_by_file(patch: str) -> dict[str, list[str]]:
    """Hunk lines (from the first @@) of each file a unified diff touches, by new path
    (old path for deletions). Lines before any file header are ignored."""
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    lines = (patch or "").splitlines()
    for n, line in enumerate(lines):
        if line.startswith("diff --git "):
            current = None
            continue
        # "--- " followed by "+++ " opens a file, with or without a "diff --git" line before it.
        if line.startswith("--- ") and n + 1 < len(lines) and lines[n + 1].startswith("+++ "):
            old = _OLD_PATH.match(line)
            new = _PATH.match(lines[n + 1])
            path = new.group(1) if new else ""
            if path in ("/dev/null", "dev/null", "") and old:
                path = old.group(1)
            current = files.setdefault(path, [])
            continue
        if line.startswith("+++ ") and n > 0 and lines[n - 1].startswith("--- "):
            continue
        if current is not None and (line.startswith("@@") or current):
            current.append(line)
    return files


def compare_patches(a: str, b: str, *, context: int = 3) -> list[FileComparison]:
    files_a, files_b = split_by_file(a), split_by_file(b)
    result = []
    for path in sorted(set(files_a) | set(files_b)):
        la, lb = files_a.get(path), files_b.get(path)
        if la is None:
            assert lb is not None  # the path is in one of the two
            result.append(
                FileComparison(
                    path, "only_b", [CompareRow("only_b", t) for t in lb[:MAX_ROWS_PER_FILE]], len(lb) > MAX_ROWS_PER_FILE
                )
            )
            continue
        if lb is None:
            result.append(
                FileComparison(
                    path, "only_a", [CompareRow("only_a", t) for t in la[:MAX_ROWS_PER_FILE]], len(la) > MAX_ROWS_PER_FILE
                )
            )
            continue
        # Hunk headers carry line numbers that differ whenever anything above differs; compare bodies.
        body_a = [t for t in la if not t.startswith("@@")]
        body_b = [t for t in lb if not t.startswith("@@")]
        if body_a == body_b:
            result.append(FileComparison(path, "identical"))
            continue
        rows: list[CompareRow] = []
        matcher = difflib.SequenceMatcher(a=body_a, b=body_b, autojunk=False)
        for group in matcher.get_grouped_opcodes(context):
            rows.append(CompareRow("gap", "…"))
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    rows.extend(CompareRow("same", t) for t in body_a[i1:i2])
                    continue
                rows.extend(CompareRow("only_a", t) for t in body_a[i1:i2])
                rows.extend(CompareRow("only_b", t) for t in body_b[j1:j2])
        result.append(FileComparison(path, "differs", rows[:MAX_ROWS_PER_FILE], len(rows) > MAX_ROWS_PER_FILE))
    return result
