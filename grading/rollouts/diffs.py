"""Parse patches (unidiff) into rows for unified and split views, highlighted by pygments.

Pure: no Django. Highlighted fragments are HTML produced by pygments' HtmlFormatter,
which escapes every character of the source; callers may mark exactly these strings
safe and nothing else.

A patch that unidiff cannot parse is not an error for storage: the raw text is kept and
shown escaped, unhighlighted, with a warning.

>>> p = parse_patch("diff --git a/x.py b/x.py\\n--- a/x.py\\n+++ b/x.py\\n@@ -1,2 +1,2 @@\\n a = 1\\n-b = 2\\n+b = 3\\n")
>>> (len(p.files), p.files[0].path, p.files[0].added, p.files[0].removed)
(1, 'x.py', 1, 1)
>>> [(r.kind, r.old_no, r.new_no) for r in p.files[0].hunks[0].unified]
[('context', 1, 1), ('removed', 2, None), ('added', None, 2)]
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

_FORMATTER = HtmlFormatter(nowrap=True, classprefix="hl-")


@dataclass(frozen=True)
class Row:
    kind: str  # context | added | removed
    old_no: int | None
    new_no: int | None
    html: str  # pygments-escaped ("" when parsed without rendering)
    text: str = ""  # the raw line, for tools that show it as data (never as HTML)


@dataclass(frozen=True)
class SplitRow:
    old_no: int | None
    old_kind: str  # context | removed | empty
    old_html: str
    new_no: int | None
    new_kind: str  # context | added | empty
    new_html: str


@dataclass
class Hunk:
    header: str
    unified: list[Row] = field(default_factory=list)
    split: list[SplitRow] = field(default_factory=list)


@dataclass
class FileDiff:
    path: str
    source_path: str
    target_path: str
    status: str  # added | removed | modified | renamed | binary
    added: int
    removed: int
    hunks: list[Hunk]


@dataclass
class ParsedPatch:
    raw: str
    files: list[FileDiff]
    error: str | None = None  # set when unidiff could not parse the text

    @property
    def parses(self) -> bool:
        return self.error is None


def _strip_prefix(path: str) -> str:
    if path.startswith(("a/", "b/")):
        return path[2:]
    return path


@lru_cache(maxsize=256)
def _lexer_for(path: str):
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


class HighlightCache:
    """Highlighted hunk sides by (path, lines), least recently used out first.

    pygments is most of a group page's cost (its lexers try dozens of regular expressions
    per token: ~1.5 ms per kB of Python), and a hunk side's HTML depends on nothing but
    the path (which picks the lexer) and its lines, so a page shown again (a reload, the
    page after a submit, the split view of the same patch) reuses it. Bounded by the
    characters held (lines and HTML), per process; thread-safe.
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self._items: OrderedDict[tuple, tuple[tuple[str, ...], int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> tuple[str, ...] | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: tuple, html: tuple[str, ...]) -> None:
        size = len(key[0]) + sum(map(len, key[1])) + sum(map(len, html))
        if size > self.max_chars // 8:  # one huge hunk must not flush everything else
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = (html, size)
            self.chars += size
            while self.chars > self.max_chars:
                _, (_, dropped) = self._items.popitem(last=False)
                self.chars -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.chars = 0


highlight_cache = HighlightCache(max_chars=8_000_000)  # ~12 MB per process, ~60 real-size groups


def _highlight_lines(lines: list[str], path: str, colour: bool = True) -> tuple[str, ...]:
    """Highlight lines together (keeps multi-line strings coloured) and split them back."""
    if not lines:
        return ()
    if not colour:
        return ("",) * len(lines)
    key = (path, tuple(lines))
    cached = highlight_cache.get(key)
    if cached is not None:
        return cached
    html = highlight("\n".join(lines), _lexer_for(path), _FORMATTER)
    out = html.split("\n")
    # pygments adds no trailing newline with ensurenl=False, but be exact about the count.
    if len(out) < len(lines):
        out += [""] * (len(lines) - len(out))
    result = tuple(out[: len(lines)])
    highlight_cache.put(key, result)
    return result


def _build_hunk(hunk, path: str, colour: bool = True) -> Hunk:
    lines = [(line.line_type, line.source_line_no, line.target_line_no, line.value.rstrip("\n").rstrip("\r")) for line in hunk]
    lines = [entry for entry in lines if entry[0] in (" ", "+", "-")]
    old_side = [i for i, entry in enumerate(lines) if entry[0] in (" ", "-")]
    new_side = [i for i, entry in enumerate(lines) if entry[0] in (" ", "+")]
    old_html = dict(zip(old_side, _highlight_lines([lines[i][3] for i in old_side], path, colour)))
    new_html = dict(zip(new_side, _highlight_lines([lines[i][3] for i in new_side], path, colour)))

    result = Hunk(header=f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@ {hunk.section_header}".rstrip())
    kinds = {" ": "context", "+": "added", "-": "removed"}
    for i, (kind, old_no, new_no, text) in enumerate(lines):
        html = new_html[i] if kind == "+" else old_html[i]
        result.unified.append(Row(kinds[kind], old_no, new_no, html, text))

    # Split view: pair each run of removals with the run of additions that follows it.
    i = 0
    while i < len(lines):
        kind = lines[i][0]
        if kind == " ":
            result.split.append(SplitRow(lines[i][1], "context", old_html[i], lines[i][2], "context", new_html[i]))
            i += 1
            continue
        removed, added = [], []
        while i < len(lines) and lines[i][0] == "-":
            removed.append(i)
            i += 1
        while i < len(lines) and lines[i][0] == "+":
            added.append(i)
            i += 1
        for k in range(max(len(removed), len(added))):
            left = removed[k] if k < len(removed) else None
            right = added[k] if k < len(added) else None
            result.split.append(
                SplitRow(
                    lines[left][1] if left is not None else None,
                    "removed" if left is not None else "empty",
                    old_html[left] if left is not None else "",
                    lines[right][2] if right is not None else None,
                    "added" if right is not None else "empty",
                    new_html[right] if right is not None else "",
                )
            )
    return result


def _status(patched_file) -> str:
    if patched_file.is_binary_file:
        return "binary"
    if patched_file.is_added_file:
        return "added"
    if patched_file.is_removed_file:
        return "removed"
    if _strip_prefix(patched_file.source_file) != _strip_prefix(patched_file.target_file):
        return "renamed"
    return "modified"


def changed_lines(text: str) -> int:
    """Lines of a patch that add or remove something: every line starting with + or -,
    except a "--- " / "+++ " pair of file headers."""
    lines = text.splitlines()
    count, skip = 0, False
    for n, line in enumerate(lines):
        if skip:
            skip = False
            continue
        if line.startswith("--- ") and n + 1 < len(lines) and lines[n + 1].startswith("+++ "):
            skip = True
            continue
        count += line[:1] in ("+", "-")
    return count


def _patch_set(text: str):
    try:
        patch_set = PatchSet(text)
    except (UnidiffParseError, ValueError, IndexError) as exc:
        return None, f"not a parseable unified diff ({exc})"
    if text.strip() and not len(patch_set):
        return None, "no file headers (--- / +++) found; not a unified diff"
    # unidiff skips lines it cannot place (after the last hunk, past a hunk's stated length)
    # without a word; a patch must never read shorter to a reviewer than to `git apply`.
    placed, present = patch_set.added + patch_set.removed, changed_lines(text)
    if placed != present:
        return None, (f"the diff parser placed {placed} of its {present} added/removed lines (lines outside "
                      "a hunk or past a hunk's stated length); the raw patch is shown so nothing is hidden")
    return patch_set, None


def parse_patch(text: str, *, render: bool = True) -> ParsedPatch:
    """Files and hunks of a patch; with render=False the rows carry line numbers but no HTML
    (what evidence resolution needs, without pygments' cost)."""
    patch_set, error = _patch_set(text or "")
    if patch_set is None:
        return ParsedPatch(raw=text, files=[], error=error)
    files = []
    for patched_file in patch_set:
        path = _strip_prefix(patched_file.path)
        hunks = [_build_hunk(h, path, colour=render) for h in patched_file]
        files.append(
            FileDiff(
                path=path,
                source_path=_strip_prefix(patched_file.source_file),
                target_path=_strip_prefix(patched_file.target_file),
                status=_status(patched_file),
                added=patched_file.added,
                removed=patched_file.removed,
                hunks=hunks,
            )
        )
    return ParsedPatch(raw=text, files=files)


def patch_stats(text: str) -> tuple[int, int, int, bool]:
    """(files, lines added, lines removed, parses) without rendering anything."""
    if not text:
        return 0, 0, 0, True
    patch_set, error = _patch_set(text)
    if patch_set is None:
        return 0, 0, 0, False
    return len(patch_set), patch_set.added, patch_set.removed, True


def pygments_css() -> str:
    return _FORMATTER.get_style_defs(".hl")
