"""Parse patches (unidiff) into rows for unified and split views, highlighted by pygments.

Pure: no Django. Highlighted fragments are HTML produced by pygments' HtmlFormatter,
which escapes every character of the source, or the line passed through html.escape when
it is shown unhighlighted; callers may mark exactly these strings safe and nothing else.

Highlighting has a budget (`HighlightBudget`): pygments runs in a worker process that is killed
when a hunk side takes longer than HUNK_SECONDS (grading/rollouts/highlighter.py: some
lexers backtrack catastrophically on input the agent controls), one patch (or one page,
when a budget is shared) spends at most HIGHLIGHT_SECONDS and HIGHLIGHT_CHARS on it, and a
line longer than HIGHLIGHT_LINE_CHARS is not lexed. Past the budget the text is shown
escaped and unhighlighted, and the hunk carries a note saying so.

A patch that unidiff cannot parse is not an error for storage: the raw text is kept and
shown escaped, unhighlighted, with a warning.

>>> p = parse_patch("diff --git a/x.py b/x.py\\n--- a/x.py\\n+++ b/x.py\\n@@ -1,2 +1,2 @@\\n a = 1\\n-b = 2\\n+b = 3\\n")
>>> (len(p.files), p.files[0].path, p.files[0].added, p.files[0].removed)
(1, 'x.py', 1, 1)
>>> [(r.kind, r.old_no, r.new_no) for r in p.files[0].hunks[0].unified]
[('context', 1, 1), ('removed', 2, None), ('added', None, 2)]
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape, unescape
from typing import Any

from unidiff import Hunk as UnidiffHunk
from unidiff import PatchedFile, PatchSet
from unidiff.errors import UnidiffParseError

from grading.rollouts.highlighter import HighlightPool, Unhighlighted

HUNK_SECONDS = 1.0  # one hunk side's lexing; past it the worker is killed (Scala, 40 backslashes: ~25 s before)
HIGHLIGHT_SECONDS = 2.0  # wall clock one budget (a patch, or a page's patches) spends highlighting
HIGHLIGHT_CHARS = 400_000  # characters one budget highlights (~0.6 s of pygments)
HIGHLIGHT_LINE_CHARS = 2_000  # a longer line is shown plain (minified code, data), never lexed

highlighter = HighlightPool()


@dataclass
class HighlightBudget:
    """What highlighting may still spend; one per patch, or shared by a page's patches."""

    seconds: float = HIGHLIGHT_SECONDS
    chars: int = HIGHLIGHT_CHARS
    hunk_seconds: float = HUNK_SECONDS
    line_chars: int = HIGHLIGHT_LINE_CHARS
    spent_seconds: float = 0.0
    spent_chars: int = 0
    stopped: int = 0  # hunk sides whose highlighting was stopped (timed out or failed)


@dataclass(frozen=True)
class Row:
    kind: str  # context | added | removed
    old_no: int | None
    new_no: int | None
    html: str  # pygments-escaped or html.escape()d ("" when parsed without rendering)
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
    note: str = ""  # why (part of) it is shown unhighlighted; plain text, to be escaped


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
    shown_lines: int = 0  # hunk lines with a row (less than total_lines when max_rows/max_chars cut it)
    total_lines: int = 0

    @property
    def parses(self) -> bool:
        return self.error is None

    @property
    def cut(self) -> bool:
        return self.shown_lines < self.total_lines


def _strip_prefix(path: str) -> str:
    if path.startswith(("a/", "b/")):
        return path[2:]
    return path


class HighlightCache:
    """Highlighted hunk sides by (path, lines): (HTML per line, note), least recently used out first.

    pygments is most of a group page's cost (its lexers try dozens of regular expressions
    per token: ~1.5 ms per kB of Python), and a hunk side's HTML depends on nothing but
    the path (which picks the lexer) and its lines, so a page shown again (a reload, the
    page after a submit, the split view of the same patch) reuses it. A side whose lexing
    was stopped after a full HUNK_SECONDS is kept too, as its plain text and note, so a
    group that stalls the lexer costs that time once per process, not on every showing;
    one shown plain only because the budget ran out is not (another page may have budget).
    Bounded by the characters held (lines and HTML), per process; thread-safe.
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self._items: OrderedDict[tuple[Any, ...], tuple[tuple[tuple[str, ...], str], int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> tuple[tuple[str, ...], str] | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: tuple[Any, ...], value: tuple[tuple[str, ...], str]) -> None:
        size = len(key[0]) + sum(map(len, key[1])) + sum(map(len, value[0])) + len(value[1])
        if size > self.max_chars // 8:  # one huge hunk must not flush everything else
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = (value, size)
            self.chars += size
            while self.chars > self.max_chars:
                _, (_, dropped) = self._items.popitem(last=False)
                self.chars -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.chars = 0


highlight_cache = HighlightCache(max_chars=8_000_000)  # ~12 MB per process, ~60 real-size groups


_SPAN = re.compile(r'<span class="hl-[A-Za-z0-9-]+(?: hl-[A-Za-z0-9-]+)*">|</span>')


def _text_of(fragment: str) -> str:
    """The text a highlighted line shows: its spans removed, its entities read."""
    return unescape(_SPAN.sub("", fragment))


def _plain(lines: list[str]) -> tuple[str, ...]:
    return tuple(escape(line) for line in lines)


def highlight_lines(lines: list[str], path: str, budget: HighlightBudget | None = None) -> tuple[tuple[str, ...], str]:
    """(HTML per line, note) for one hunk side: highlighted together (keeps multi-line
    strings coloured) and split back; each line escaped and unhighlighted instead when the
    budget is spent or the lexer is stopped, with a note saying why ("" when none)."""
    if not lines:
        return (), ""
    budget = budget if budget is not None else HighlightBudget()
    key = (path, tuple(lines))
    cached = highlight_cache.get(key)
    if cached is not None:
        return cached
    # Not lexed: a line too long, or holding a CR (pygments reads it as a line break, which
    # would shift every row after it). An empty line stands in so the rows stay aligned.
    skipped = {i for i, line in enumerate(lines) if len(line) > budget.line_chars or "\r" in line}
    lexed = ["" if i in skipped else line for i, line in enumerate(lines)]
    size = sum(map(len, lexed))
    left = budget.seconds - budget.spent_seconds
    if budget.spent_chars + size > budget.chars:
        return _plain(lines), f"Shown without highlighting: the highlighting budget ({budget.chars:,} characters) is spent."
    if left <= 0:
        return _plain(lines), f"Shown without highlighting: the highlighting budget ({budget.seconds:g} s) is spent."
    timeout = min(left, budget.hunk_seconds)
    started = time.monotonic()
    try:
        html = highlighter.highlight(path, "\n".join(lexed), timeout)
    except Unhighlighted as exc:
        budget.stopped += 1
        result = (_plain(lines), f"Shown without highlighting: {exc}.")
        if timeout >= budget.hunk_seconds:  # a full chance: it would stop again, so remember
            highlight_cache.put(key, result)
        return result
    finally:
        budget.spent_seconds += time.monotonic() - started
        budget.spent_chars += size
    out = html.split("\n")
    # The formatter ends its last line with a newline (an empty last line then reads as none):
    # trailing empty strings are trimmed or padded; any other mismatch is shown plain.
    if len(out) > len(lines) and not any(out[len(lines) :]):
        out = out[: len(lines)]
    elif len(out) < len(lines) and not any(lexed[len(out) :]):
        out += [""] * (len(lines) - len(out))
    if len(out) != len(lines) or any(_text_of(h) != line for h, line in zip(out, lexed)):
        # A lexer that drops or alters text (some do, on input they do not expect) must not
        # hide a line from the reviewer: the patch's own text is shown instead.
        budget.stopped += 1
        return _plain(lines), "Shown without highlighting: the highlighter's output did not match the patch's text."
    note = ""
    if skipped:
        for i in skipped:
            out[i] = escape(lines[i])
        note = (
            f"{len(skipped)} line{'s' if len(skipped) > 1 else ''} longer than {budget.line_chars:,} characters "
            "or holding a carriage return shown without highlighting."
        )
    result = (tuple(out), note)
    highlight_cache.put(key, result)
    return result


def _hunk_lines(hunk: UnidiffHunk) -> list[tuple[str, int | None, int | None, str]]:
    """(type, old number, new number, text) of a hunk's context, added and removed lines."""
    return [
        (line.line_type, line.source_line_no, line.target_line_no, line.value.rstrip("\n").rstrip("\r"))
        for line in hunk
        if line.line_type in (" ", "+", "-")
    ]


def _build_hunk(
    hunk: UnidiffHunk,
    lines: list[Any],
    path: str,
    colour: bool,
    budget: HighlightBudget,
    ahead: HunkHighlight | None = None,
) -> Hunk:
    old_side = [i for i, entry in enumerate(lines) if entry[0] in (" ", "-")]
    new_side = [i for i, entry in enumerate(lines) if entry[0] in (" ", "+")]
    if colour and ahead is not None:  # highlighted ahead, whole: `lines` may be a prefix of the hunk's
        old_lines, old_note = tuple(ahead[0][: len(old_side)]), ahead[1]
        new_lines, new_note = tuple(ahead[2][: len(new_side)]), ahead[3]
    elif colour:
        old_lines, old_note = highlight_lines([lines[i][3] for i in old_side], path, budget)
        new_lines, new_note = highlight_lines([lines[i][3] for i in new_side], path, budget)
    else:
        old_lines, old_note, new_lines, new_note = ("",) * len(old_side), "", ("",) * len(new_side), ""
    old_html = dict(zip(old_side, old_lines))
    new_html = dict(zip(new_side, new_lines))

    result = Hunk(
        header=(
            f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@ {hunk.section_header}"
        ).rstrip(),
        note=" ".join(dict.fromkeys(n for n in (old_note, new_note) if n)),
    )
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


def _status(patched_file: PatchedFile) -> str:
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


def _patch_set(text: str) -> tuple[PatchSet | None, str | None]:
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
        return None, (
            f"the diff parser placed {placed} of its {present} added/removed lines (lines outside "
            "a hunk or past a hunk's stated length); the raw patch is shown so nothing is hidden"
        )
    return patch_set, None


def parse_patch(
    text: str,
    *,
    render: bool = True,
    budget: HighlightBudget | None = None,
    max_rows: int | None = None,
    max_chars: int | None = None,
    ahead: Sequence[HunkHighlight] | None = None,
    render_file: Callable[[str, str], bool] | None = None,
) -> ParsedPatch:
    """Files and hunks of a patch; with render=False the rows carry line numbers but no HTML
    (what evidence resolution needs, without pygments' cost).

    Highlighting spends `budget` (a fresh HighlightBudget when None; pass one to share it across a
    page's patches). `ahead`: this patch's hunks as `highlight_patch` highlighted them ahead
    (read, not lexed again; a hunk whose sides do not match it is lexed as usual);
    `render_file(path, status)`: False leaves that file without hunks (a file not shown: its
    path, status and counts only).
    With max_rows / max_chars, rows stop at the first hunk line that would
    pass either (the patch is `cut`: shown_lines < total_lines; the files after it are left out).
    """
    patch_set, error = _patch_set(text or "")
    if patch_set is None:
        return ParsedPatch(raw=text, files=[], error=error)
    budget = budget if budget is not None else HighlightBudget()
    rows_left = max_rows if max_rows is not None else float("inf")
    chars_left = max_chars if max_chars is not None else float("inf")
    files, shown, total, cut = [], 0, 0, False
    numbered = 0  # the hunk's number in the whole patch (what `ahead` is indexed by)
    for patched_file in patch_set:
        path = _strip_prefix(patched_file.path)
        colour = render and (render_file is None or render_file(path, _status(patched_file)))
        hunks, cut_before = [], cut
        for h in patched_file:
            lines = _hunk_lines(h)
            total += len(lines)
            number, numbered = numbered, numbered + 1
            if cut:
                continue
            keep = 0
            for entry in lines:
                if keep >= rows_left or len(entry[3]) > chars_left:
                    cut = True
                    break
                keep += 1
                chars_left -= len(entry[3])
            rows_left -= keep
            shown += keep
            if keep and (colour or not render):  # a file render_file leaves out: counted, no rows built
                whole = _ahead_of(ahead, number, lines) if colour else None
                hunks.append(_build_hunk(h, lines[:keep], path, colour, budget, whole))
        if cut_before or (cut and not hunks and (colour or not render)):
            continue  # cut before any of its rows: left out with the rest
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
    return ParsedPatch(raw=text, files=files, shown_lines=shown, total_lines=total)


# A hunk highlighted ahead (highlight_patch): (old side's HTML per line, its note, new side's
# HTML per line, its note), the sides as highlight_lines gives them for the whole hunk.
HunkHighlight = tuple[Sequence[str], str, Sequence[str], str]


def _ahead_of(ahead: Sequence[HunkHighlight] | None, number: int, lines: list[Any]) -> HunkHighlight | None:
    """Hunk `number`'s highlight from `ahead` when its sides have the hunk's line counts."""
    if ahead is None or number >= len(ahead):
        return None
    item = ahead[number]
    n_old = sum(1 for entry in lines if entry[0] in (" ", "-"))
    n_new = sum(1 for entry in lines if entry[0] in (" ", "+"))
    if len(item) != 4 or len(item[0]) != n_old or len(item[2]) != n_new:
        return None
    return item


def patch_digest(text: str) -> str:
    """What a patch highlighted ahead is stored with (grading.models.PatchHighlight): the
    sha256 of its text, so a highlight is only ever read for the text it was made from."""
    return hashlib.sha256((text or "").encode("utf-8", "surrogatepass")).hexdigest()


def highlight_patch(text: str, budget: HighlightBudget | None = None) -> list[HunkHighlight] | None:
    """Every hunk of a patch highlighted, in the patch's order, as parse_patch(ahead=...) reads
    them: done ahead of the reviewer (grading.highlights), spending `budget` (a fresh
    HighlightBudget, one patch's, when None) as parse_patch would. None: it does not parse
    (it is shown as plain text)."""
    patch_set, _error = _patch_set(text or "")
    if patch_set is None:
        return None
    budget = budget if budget is not None else HighlightBudget()
    out: list[HunkHighlight] = []
    for patched_file in patch_set:
        path = _strip_prefix(patched_file.path)
        for h in patched_file:
            lines = _hunk_lines(h)
            old_html, old_note = highlight_lines([e[3] for e in lines if e[0] in (" ", "-")], path, budget)
            new_html, new_note = highlight_lines([e[3] for e in lines if e[0] in (" ", "+")], path, budget)
            out.append((old_html, old_note, new_html, new_note))
    return out


@dataclass(frozen=True)
class ChangedFile:
    """One file of a patch as its changed lines, without line numbers or HTML."""

    path: str
    source_path: str
    status: str  # as FileDiff.status
    removed: tuple[str, ...]
    added: tuple[str, ...]


@dataclass(frozen=True)
class PatchRead:
    """A patch read once for what ingest stores: its counts and each file's changed lines
    (grading.rollouts.clusters keys a rollout's change from them)."""

    parses: bool
    files: tuple[ChangedFile, ...] = ()
    added: int = 0
    removed: int = 0

    @property
    def stats(self) -> tuple[int, int, int, bool]:
        """(files, lines added, lines removed, parses)."""
        return len(self.files), self.added, self.removed, self.parses


def read_patch(text: str) -> PatchRead:
    """Files and changed lines of a patch, parsed once by the same parser as parse_patch."""
    if not text:
        return PatchRead(parses=True)
    patch_set, _error = _patch_set(text)
    if patch_set is None:
        return PatchRead(parses=False)
    files = []
    for patched_file in patch_set:
        removed, added = [], []
        for hunk in patched_file:
            for line in hunk:
                if line.line_type == "+":
                    added.append(line.value.rstrip("\n").rstrip("\r"))
                elif line.line_type == "-":
                    removed.append(line.value.rstrip("\n").rstrip("\r"))
        files.append(
            ChangedFile(
                path=_strip_prefix(patched_file.path),
                source_path=_strip_prefix(patched_file.source_file),
                status=_status(patched_file),
                removed=tuple(removed),
                added=tuple(added),
            )
        )
    return PatchRead(parses=True, files=tuple(files), added=patch_set.added, removed=patch_set.removed)


def patch_stats(text: str) -> tuple[int, int, int, bool]:
    """(files, lines added, lines removed, parses) without rendering anything."""
    return read_patch(text).stats
