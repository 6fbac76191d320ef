"""A lane's patch on the group page: its files' diff tables (core change first), each linked
to the lane's files view, and the scratch files the agent left listed apart behind
"+N extra files", their diffs loaded when asked (reviews.presenters.group_page.parts)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.urls import reverse
from django.utils.http import urlencode

from grading.models import Group
from grading.registry.workspaces import has_workspace
from grading.rollouts.diffs import FileDiff, HighlightBudget, ParsedPatch, parse_patch
from grading.rollouts.invisible import INVISIBLE
from grading.rollouts.patch_files import COLLAPSED, file_kind, order_files
from reviews.presenters.group_page.head import group_args
from reviews.selectors.lanes import Lanes

if TYPE_CHECKING:
    from grading.selectors.rollouts import RolloutWithPatch

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


def _shown_inline(extra_files) -> Callable[[str, str], bool]:
    """render_file for a lane's patch on the page: its scratch files (COLLAPSED kinds) are
    not rendered there; their diffs load when asked (`extra_files_part`)."""
    extra = frozenset(extra_files or ())
    return lambda path, status: file_kind(path, status, extra_files=extra) not in COLLAPSED


def only_collapsed(extra_files) -> Callable[[str, str], bool]:
    """render_file for the scratch files' partial: those files only."""
    extra = frozenset(extra_files or ())
    return lambda path, status: file_kind(path, status, extra_files=extra) in COLLAPSED


@dataclass(frozen=True)
class InlineDiffs:
    """The patches of the lanes on the page, as far as they are shown inline."""

    values: Mapping[int, dict]  # a lane on the page -> its `diff`, or `diff_deferred`
    deferred: AbstractSet[int]  # lanes whose patch loads when asked
    scratch: Mapping[int, AbstractSet[str]]  # a lane on the page -> its scratch files (their diffs load when asked)


def inline_diffs(group: Group, shown: list[RolloutWithPatch], lanes: Lanes) -> InlineDiffs:
    """The diffs of the lanes on the page (`shown`), each patch up to DIFF_INLINE_CHARS and
    all of them up to DIFF_PAGE_CHARS, under one highlight budget; the others load when asked."""
    budget = DIFF_PAGE_CHARS
    highlight_budget = HighlightBudget()  # one for the page: a lane that stalls the lexer cannot multiply it
    deferred: set[int] = set()
    scratch: dict[int, frozenset[str]] = {}
    values: dict[int, dict] = {}
    for rollout in shown:  # only lanes on the page need their patch parsed and highlighted
        size = len(rollout.patch_text)
        if size > DIFF_INLINE_CHARS or size > budget:  # a click away, so one huge patch cannot stall the page
            values[rollout.index] = {"diff_deferred": True}
            deferred.add(rollout.index)
            continue
        budget -= size
        # Highlighted ahead where it was (grading.highlights); the scratch files load on demand, unlexed here.
        parsed = parse_patch(
            rollout.patch_text,
            budget=highlight_budget,
            ahead=rollout.patch_ahead,
            render_file=_shown_inline(rollout.extra_files),
        )
        key = lanes.key(rollout.index)
        extra_url = reverse("rollout-extra-files", args=[*group_args(group), key]) + "?view=unified"
        diff = diff_of(parsed, key, "unified", rollout.extra_files, group=group, extra_url=extra_url)
        values[rollout.index] = {"diff": diff}
        scratch[rollout.index] = frozenset(t.file.path for t in diff.extra)
    return InlineDiffs(values=values, deferred=frozenset(deferred), scratch=scratch)
