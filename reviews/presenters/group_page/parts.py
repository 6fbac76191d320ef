"""The group page's rollout partials, loaded on demand (templates/reviews/group.html's
partials, or rollout_part.html on their own): a lane's diff in either view, its scratch
files' diffs, a page of its turns (or of those holding a search), its test log, and its
whole patch as plain text."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from django.urls import reverse

from grading.models import Group, Rollout, RolloutContent
from grading.rollouts.diffs import parse_patch
from grading.rollouts.turns import find_turns, fold_head, to_turns
from grading.selectors.rollouts import patch_highlight, rollout_content
from reviews.presenters.group_page.diffs import DIFF_PARTIAL_CHARS, DIFF_PARTIAL_ROWS, diff_of, only_collapsed
from reviews.presenters.group_page.head import GroupHead, group_args, group_head
from reviews.presenters.group_page.lanes import Lane, lane_of
from reviews.presenters.group_page.turns import TURNS_PER_PAGE
from reviews.selectors.lanes import Lanes, lanes_for

LOG_PREVIEW_CHARS = 200_000
TURN_QUERY_CHARS = 200  # a search within one rollout's turns (a substring; never a pattern)


@dataclass(frozen=True)
class RolloutPart:
    """A rollout partial's context: its diff, a page of its turns, or its test log."""

    project: Any
    run: Any
    group: GroupHead
    rollout: Lane
    part: str  # diff | extra (a patch's scratch files) | turns | log
    values: dict = field(default_factory=dict)

    def context(self) -> dict:
        context = {"project": self.project, "run": self.run, "group": self.group, "rollout": self.rollout}
        return {**context, "part": self.part, **self.values}


def part_rollout(*, user, group: Group, lane: str, body: str) -> tuple[Rollout, RolloutContent, Lanes] | None:
    """The rollout `lane` names for this person (its index, or their label when they judge
    the group blind) and its `body`; None when it names none of the group's."""
    lanes = lanes_for(user=user, group=group)
    index = lanes.index_of(lane)
    if index is None:
        return None
    rollout, content = rollout_content(group, index, body)
    return rollout, content, lanes


def rollout_part(group: Group, lane: Lane, part: str, **values) -> RolloutPart:
    return RolloutPart(project=group.run.project, run=group.run, group=group_head(group), rollout=lane, part=part, values=values)


def raw_patch(*, user, group: Group, lane: str) -> tuple[str, str] | None:
    """(the lane's key, its whole patch) for the plain-text download; None: no such lane."""
    found = part_rollout(user=user, group=group, lane=lane, body="patch")
    if found is None:
        return None
    rollout, content, lanes = found
    return lanes.key(rollout.index), content.patch or ""


def diff_part(*, user, group: Group, lane: str, view: str) -> RolloutPart | None:
    """A rollout's patch in the unified or split view, at most DIFF_PARTIAL_ROWS lines and
    DIFF_PARTIAL_CHARS characters of it (saying so, with a link to the whole text)."""
    return _patch_part(user=user, group=group, lane=lane, view=view, scratch=False)


def extra_files_part(*, user, group: Group, lane: str, view: str) -> RolloutPart | None:
    """The diffs of a rollout's scratch files (the COLLAPSED kinds the group page lists behind
    "+N extra files" and loads from here when asked), within the diff partial's limits;
    None: no such lane."""
    return _patch_part(user=user, group=group, lane=lane, view=view, scratch=True)


def _patch_part(*, user, group: Group, lane: str, view: str, scratch: bool) -> RolloutPart | None:
    found = part_rollout(user=user, group=group, lane=lane, body="patch")
    if found is None:
        return None
    rollout, content, lanes = found
    patch = content.patch or ""
    parsed = parse_patch(
        patch,
        max_rows=DIFF_PARTIAL_ROWS,
        max_chars=DIFF_PARTIAL_CHARS,
        ahead=patch_highlight(rollout, patch),
        render_file=only_collapsed(rollout.extra_files) if scratch else None,
    )
    note = ""
    if parsed.error and len(patch) > DIFF_PARTIAL_CHARS:
        parsed = replace(parsed, raw=patch[:DIFF_PARTIAL_CHARS])
        note = f"Showing the first {DIFF_PARTIAL_CHARS:,} of its {len(patch):,} characters."
    elif parsed.cut:
        note = (
            f"Showing the first {parsed.shown_lines:,} of its {parsed.total_lines:,} lines "
            f"({len(parsed.files)} of {rollout.patch_files} files); one view shows at most "
            f"{DIFF_PARTIAL_ROWS:,} lines or {DIFF_PARTIAL_CHARS:,} characters."
        )
    raw_url = reverse("rollout-diff", args=[*group_args(group), lane]) + "?format=raw" if note else ""
    key = lanes.key(rollout.index)
    diff = diff_of(parsed, key, view, rollout.extra_files, group=group, note=note, raw_url=raw_url)
    return rollout_part(group, lane_of(rollout, lanes, diff=diff), "extra" if scratch else "diff", diff_view=view)


class TurnQueryTooLong(ValueError):
    """A search within a rollout's turns longer than TURN_QUERY_CHARS."""


def turns_part(*, user, group: Group, lane: str, start: int, query: str) -> RolloutPart | None:
    """A page of a rollout's turns from `start`, or of those containing `query` (raises
    TurnQueryTooLong past TURN_QUERY_CHARS, once the lane is known to exist)."""
    found = part_rollout(user=user, group=group, lane=lane, body="messages")
    if found is None:
        return None
    if len(query) > TURN_QUERY_CHARS:
        raise TurnQueryTooLong(query)
    rollout, content, lanes = found
    messages = content.messages if isinstance(content.messages, list) else []
    if query:
        turns, next_start = find_turns(messages, query, start, TURNS_PER_PAGE)
    else:
        turns = to_turns(messages, start, start + TURNS_PER_PAGE)
        next_start = start + TURNS_PER_PAGE if start + TURNS_PER_PAGE < len(messages) else None
    turns = [replace(turn, fold=fold_head(turn.observation)) for turn in turns]
    return rollout_part(
        group,
        lane_of(rollout, lanes),
        "turns",
        query=query,
        start=start,
        turns=turns,
        next_start=next_start,
        n_messages=len(messages),
    )


def log_part(*, user, group: Group, lane: str) -> RolloutPart | None:
    """A rollout's test log, its last LOG_PREVIEW_CHARS characters where it is longer."""
    found = part_rollout(user=user, group=group, lane=lane, body="test_log")
    if found is None:
        return None
    rollout, content, lanes = found
    log = content.test_log or ""
    truncated = len(log) > LOG_PREVIEW_CHARS
    return rollout_part(
        group,
        lane_of(rollout, lanes),
        "log",
        log=log[-LOG_PREVIEW_CHARS:] if truncated else log,
        log_truncated=truncated,
        log_size=len(log),
    )
