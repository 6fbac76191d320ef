"""A lane's patch on the group page: its files' diff tables (core change first), each linked
to the lane's files view, and the scratch files the agent left listed apart behind
"+N extra files", their diffs loaded when asked (reviews.presenters.group_page.parts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.urls import reverse
from django.utils.http import urlencode

from grading.models import Group
from grading.registry.workspaces import has_workspace
from grading.rollouts.diffs import FileDiff, ParsedPatch
from grading.rollouts.invisible import INVISIBLE
from grading.rollouts.patch_files import COLLAPSED, file_kind, order_files
from reviews.presenters.group_page.head import group_args

# Patches highlighted inline on a group page: one rollout's up to DIFF_INLINE_CHARS, all of
# them together up to DIFF_PAGE_CHARS; larger ones load when asked (benchmarks/group_page.py).
DIFF_INLINE_CHARS = 40_000
DIFF_PAGE_CHARS = 120_000
# One diff partial renders at most DIFF_PARTIAL_ROWS lines and DIFF_PARTIAL_CHARS characters
# of a patch (a 200k-line patch was 42 MB of HTML in 17.7 s); the whole text is offered as a
# plain-text download (?format=raw). Highlighting within that has diffs.HighlightBudget's limits.
DIFF_PARTIAL_ROWS = 8_000
DIFF_PARTIAL_CHARS = 500_000


@dataclass(frozen=True)
class DiffTable:
    """One file of a patch as the `diff_table` template tag draws it (grading.templatetags.gagar)."""

    file: FileDiff
    kind: str  # grading.rollouts.patch_files.KINDS: core first, scratch files collapsed
    lane: str
    view: str  # unified | split
    marks: bool  # the patch holds bidi / zero-width characters: show them as ⟨U+…⟩
    file_url: str = ""  # the lane's files view of this file (hunk headers open it at their line)


@dataclass(frozen=True)
class Diff:
    """A lane's patch: plain text where it does not parse, else its files' tables, the
    scratch files (`extra`) apart behind "+N extra files"."""

    error: str | None
    raw: str
    files: tuple[FileDiff, ...]
    tables: tuple[DiffTable, ...] = ()
    extra: tuple[DiffTable, ...] = ()
    note: str = ""  # why the partial shows less than the whole patch
    raw_url: str = ""  # the whole patch as plain text, where it shows less
    extra_url: str = ""  # where `extra`'s diffs load from when asked (the group page); "": rendered with it


def files_url(group: Group, lane: str, path: str, *, at: str = "rollout", line: int | None = None) -> str:
    """The lane's files view of `path` (at the rollout's state, or `at="base"`), opened at `line`."""
    query: dict[str, str | int] = {"path": path, **({"at": "base"} if at == "base" else {}), **({"line": line} if line else {})}
    return reverse("rollout-files", args=[*group_args(group), lane]) + "?" + urlencode(query)


def diff_of(parsed: ParsedPatch, lane: str, view: str, extra_files=(), *, group: Group | None = None, **values) -> Diff:
    """A parsed patch's files in the unified or split view, core change first and the agent's
    scratch files last (grading.rollouts.patch_files). `extra_files`: the rollout's cluster's
    (Rollout.extra_files). With `group` (whose task names a repository), each file links to
    the lane's files view (a removed file: at the base commit)."""
    marks = bool(INVISIBLE.search(parsed.raw or ""))
    linked = group is not None and has_workspace(group.task)

    def url(file: FileDiff) -> str:
        if not linked or group is None:
            return ""
        return files_url(group, lane, file.path, at="base" if file.status == "removed" else "rollout")

    tables = tuple(
        DiffTable(file=file, kind=kind, lane=lane, view=view, marks=marks, file_url=url(file))
        for kind, file in order_files(parsed.files, extra_files=extra_files or ())
    )
    return Diff(
        error=parsed.error,
        raw=parsed.raw,
        files=tuple(parsed.files),
        tables=tuple(t for t in tables if t.kind not in COLLAPSED),
        extra=tuple(t for t in tables if t.kind in COLLAPSED),
        **values,
    )


def shown_inline(extra_files) -> Callable[[str, str], bool]:
    """render_file for a lane's patch on the page: its scratch files (COLLAPSED kinds) are
    not rendered there; their diffs load when asked (`extra_files_part`)."""
    extra = frozenset(extra_files or ())
    return lambda path, status: file_kind(path, status, extra_files=extra) not in COLLAPSED


def only_collapsed(extra_files) -> Callable[[str, str], bool]:
    """render_file for the scratch files' partial: those files only."""
    extra = frozenset(extra_files or ())
    return lambda path, status: file_kind(path, status, extra_files=extra) in COLLAPSED
