"""Template helpers shared by the group page and the evidence links that point into it."""

from __future__ import annotations

import hashlib

from django import template
from django.utils.html import conditional_escape, escape
from django.utils.safestring import mark_safe

from grading.rollouts.invisible import describe, mark_invisible

register = template.Library()


def path_key(path: str) -> str:
    """A short stable id fragment for a file path (paths may hold any character)."""
    return hashlib.sha1(path.encode()).hexdigest()[:10]


def patch_anchor(index: int | str, path: str, line: int | str) -> str:
    return f"p{index}-{path_key(path)}-{line}"


register.filter("path_key", path_key)


def _marker(ch: str) -> str:
    return f'<span class="invisible-char" title="{describe(ch)}">⟨U+{ord(ch):04X}⟩</span>'


@register.filter(needs_autoescape=True)
def visible(text, autoescape=True):
    """Escape untrusted text, then show bidi controls and zero-width characters as visible
    ⟨U+…⟩ markers. Safe to mark safe: the text is escaped before any marker goes in, and the
    markers hold only a code point and its Unicode name."""
    escaped = conditional_escape(text) if autoescape else str(text)
    return mark_safe(mark_invisible(str(escaped), _marker))  # noqa: S308


def visible_html(html: str) -> str:
    """The same markers inside HTML that is already escaped (pygments' output)."""
    return mark_invisible(html, _marker)


def _ln(number: int | None) -> str:
    return "" if number is None else str(number)


def _row_class(kind: str) -> str:
    """A unified row's class: added or removed; a context row, the most of them, needs none."""
    return "" if kind == "context" else f' class="{kind}"'


def _row_id(lane: str, key: str, new_no: int | None) -> str:
    """The anchor evidence links point at (patch_anchor), on rows with a new-side line."""
    return f' id="p{lane}-{key}-{new_no}"' if new_no else ""


@register.simple_tag
def diff_table(table) -> str:
    """One file of a parsed patch (grading.rollouts.diffs.FileDiff) as a diff table, in the
    unified or split view. `table`: anything with `file`, `lane`, `view` ("unified" or
    "split") and `marks` (show bidi / zero-width characters as ⟨U+…⟩).

    Built as one string rather than by a template loop over every row: the same markup at
    a tenth of the cost (a group page holds thousands of diff rows). For the same reason a
    row is kept short: its line-number cells carry no class (app.css styles every cell but
    the code) and a context row carries none either. Marked safe because every piece of it is
    escaped: the code cells are pygments' output, which escapes every source character it
    emits, or the line through html.escape() where the highlighting budget stopped; hunk
    headers, budget notes and the file URL go through escape(); the rest are line numbers,
    fixed class names, the lane's key (a digit or a letter, escaped all the same) and a hex
    digest of the path. Nothing else from a rollout is ever marked safe.
    """
    file, lane = table.file, str(escape(table.lane))
    shown = visible_html if table.marks else (lambda html: html)
    key = path_key(file.path)
    file_url = getattr(table, "file_url", "")

    def header(hunk) -> str:
        text = shown(escape(hunk.header))
        start = next((row.new_no for row in hunk.unified if row.new_no), None)
        if not file_url or start is None:
            return text
        url = escape(f"{file_url}&line={start}")
        return (
            f'<a class="hunk-link" href="{url}#file-{lane}-L{start}" hx-get="{url}" hx-target="#files-{lane}" '
            f'hx-swap="innerHTML" title="Open the file as this rollout left it">{text}</a>'
        )

    if table.view == "split":
        out = ['<table class="diff split hl">\n<colgroup><col class="ln"><col><col class="ln"><col></colgroup>\n']
        for hunk in file.hunks:
            out.append(f'<tr class="hunk"><td colspan="4">{header(hunk)}</td></tr>\n')
            if hunk.note:  # why its text is shown unhighlighted (diffs.HighlightBudget)
                out.append(f'<tr class="hunk note"><td colspan="4">{escape(hunk.note)}</td></tr>\n')
            out.extend(
                f"<tr{_row_id(lane, key, row.new_no)}><td>{_ln(row.old_no)}</td>"
                f'<td class="code {row.old_kind}">{shown(row.old_html)}</td><td>{_ln(row.new_no)}</td>'
                f'<td class="code {row.new_kind}">{shown(row.new_html)}</td></tr>\n'
                for row in hunk.split
            )
    else:
        out = ['<table class="diff unified hl">\n<colgroup><col class="ln"><col class="ln"><col></colgroup>\n']
        for hunk in file.hunks:
            out.append(f'<tr class="hunk"><td colspan="3">{header(hunk)}</td></tr>\n')
            if hunk.note:  # why its text is shown unhighlighted (diffs.HighlightBudget)
                out.append(f'<tr class="hunk note"><td colspan="3">{escape(hunk.note)}</td></tr>\n')
            out.extend(
                f"<tr{_row_class(row.kind)}{_row_id(lane, key, row.new_no)}>"
                f"<td>{_ln(row.old_no)}</td><td>{_ln(row.new_no)}</td>"
                f'<td class="code">{shown(row.html)}</td></tr>\n'
                for row in hunk.unified
            )
    out.append("</table>")
    return mark_safe("".join(out))  # noqa: S308  (see the docstring)
