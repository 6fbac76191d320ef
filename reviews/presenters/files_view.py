"""The group page's "files" view of a lane: the repository as the rollout's patch left it, or at
the task's base commit, a directory listing or one file with the patch's lines marked.

Opened from a diff hunk (at its first line) or from a grader's `file:` citation (at the cited
line). It reads through the same workspace the grader reads (grading.registry.workspaces), built
for this one rollout: a rollout's state is the same commit whichever group view made it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from grading.grader.workspace import RolloutView
from grading.models import Group
from grading.registry.workspaces import FetchState, fetch_state, repo_view_for
from grading.repos.types import BASE, At, Entry, NotFetched, RepoError, RepoView
from grading.rollouts.diffs import parse_patch
from reviews.presenters.group_page.lanes import lane_of
from reviews.presenters.group_page.parts import RolloutPart, part_rollout, rollout_part

MAX_LINES = 2_000  # of one file shown at once: a window around the asked-for line past that
MAX_ENTRIES = 1_000
MAX_PATH = 1_000  # characters of a path asked for


@dataclass(frozen=True)
class FileLine:
    number: int
    text: str
    added: bool  # the rollout's patch wrote this line (in its state; never at base)
    target: bool  # the line the view was opened at


@dataclass(frozen=True)
class FilesView:
    at: str  # "base" | "rollout"
    path: str
    crumbs: tuple[tuple[str, str], ...] = ()  # (name, path) from the root to `path`
    entries: tuple[tuple[str, str, str], ...] | None = None  # (name, path, kind) of a directory
    more_entries: int = 0
    lines: tuple[FileLine, ...] = ()
    total_lines: int = 0
    line: int | None = None
    binary: bool = False
    touched: tuple[str, ...] = ()  # files the patch touches, as applied at the base commit
    applied: str = ""  # how the patch went on: clean, three_way, partial, failed
    applied_note: str = ""
    problem: str = ""  # why nothing can be shown
    fetch: FetchState | None = None  # the repository is not fetched yet: being fetched, or why not
    can_fetch: bool = False  # this person may ask for it to be fetched (a project admin)

    @property
    def first_line(self) -> int:
        return self.lines[0].number if self.lines else 0

    @property
    def last_line(self) -> int:
        return self.lines[-1].number if self.lines else 0


def _crumbs(path: str) -> tuple[tuple[str, str], ...]:
    parts = [p for p in path.split("/") if p]
    return tuple((name, "/".join(parts[: i + 1])) for i, name in enumerate(parts))


def _added_lines(view: RepoView, index: int, path: str) -> frozenset[int]:
    text = view.diff(path, BASE, index, context=0)
    parsed = parse_patch(text, render=False) if text.strip() else None
    if parsed is None or parsed.error:
        return frozenset()
    return frozenset(
        row.new_no for file in parsed.files for hunk in file.hunks for row in hunk.unified if row.kind == "added" and row.new_no
    )


def _touched(view: RepoView, index: int) -> tuple[str, ...]:
    text = view.diff("", BASE, index, context=0)
    parsed = parse_patch(text, render=False) if text.strip() else None
    return () if parsed is None or parsed.error else tuple(f.path for f in parsed.files)


def files_view(view: RepoView | None, index: int, *, at: str, path: str, line: int | None) -> FilesView:
    """What the files view shows of rollout `index`'s state (`at="rollout"`) or of the base commit."""
    path = path.strip().strip("/")
    state: At = BASE if at == "base" else index
    shown = FilesView(at=at, path=path, crumbs=_crumbs(path), line=line)
    if view is None:
        return _with(shown, problem="This group's task names no repository, or none is configured on this server.")
    try:
        applied = view.applied().get(index)
        how = applied.how if applied else ""
        note = ""
        if applied is not None and applied.error:
            note = applied.error
        elif applied is not None and applied.skipped:
            note = "left at the base commit (binary changes without their data): " + ", ".join(applied.skipped)
        shown = _with(shown, applied=how, applied_note=note)
        if state != BASE and (applied is None or not applied.usable):
            return _with(shown, problem="This rollout's patch does not apply at the base commit, so it has no state to show.")
        touched = _touched(view, index) if applied is not None and applied.usable else ()
        shown = _with(shown, touched=touched)
        try:
            data = view.read(state, path) if path else None
        except RepoError as exc:
            if "directory" not in str(exc):
                raise
            data = None
        if data is None:
            entries: list[Entry] = view.list(state, path)
            listed = tuple((e.name, f"{path}/{e.name}" if path else e.name, e.kind) for e in entries[:MAX_ENTRIES])
            return _with(shown, entries=listed, more_entries=max(0, len(entries) - MAX_ENTRIES))
        if b"\0" in data[:8192]:
            return _with(shown, binary=True)
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        added = _added_lines(view, index, path) if state != BASE else frozenset()
        first = 1
        if len(lines) > MAX_LINES:
            first = max(1, min((line or 1) - MAX_LINES // 2, len(lines) - MAX_LINES + 1))
        window = lines[first - 1 : first - 1 + MAX_LINES]
        return _with(
            shown,
            total_lines=len(lines),
            lines=tuple(
                FileLine(number=n, text=text, added=n in added, target=n == line) for n, text in enumerate(window, start=first)
            ),
        )
    except NotFetched:
        raise  # not a problem of this state: files_part says the repository is not fetched yet
    except RepoError as exc:
        return _with(shown, problem=str(exc))


def _with(view: FilesView, **values) -> FilesView:
    return replace(view, **values)


def files_part(
    *, user, group: Group, lane: str, at: str, path: str, line: int | None, can_fetch: bool = False
) -> RolloutPart | None:
    """The lane's files view for this person; None when `lane` names none of the group's rollouts.
    A repository not fetched yet, or fetched without the task's base commit, is never fetched
    here (a page request does not wait on git): the view answers from what the cache holds and
    says so, and whether it is being fetched (grading.registry.workspaces.queue_fetch)."""
    found = part_rollout(user=user, group=group, lane=lane, body="patch")
    if found is None:
        return None
    rollout, content, lanes = found
    state = fetch_state(group.task)
    if state is None or state.fetched:
        only = [RolloutView(index=rollout.index, passed=rollout.passed, patch=content.patch or "")]
        view = repo_view_for(group.task, only, fetch=False)
        try:
            shown = files_view(view, rollout.index, at=at, path=path, line=line)
            return rollout_part(group, lane_of(rollout, lanes), "files", files=shown)
        except NotFetched:
            state = fetch_state(group.task, base_missing=True)
    waiting = FilesView(at=at, path=path.strip().strip("/"), line=line, fetch=state, can_fetch=can_fetch)
    return rollout_part(group, lane_of(rollout, lanes), "files", files=waiting)
