"""A lane's turns on the group page when a search hit's link opens it: the turns box open at
the hit's turn, and the hit bar that walks the rollout's hits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.urls import reverse
from django.utils.http import urlencode

from grading.formats import params
from grading.models import Group, Rollout, RolloutContent
from grading.rollouts.turns import to_turns
from grading.search.query import QueryError, parse_query
from reviews.presenters.group_page.head import group_args
from reviews.selectors.lanes import Lanes

TURNS_PER_PAGE = 40


def _lane_asked(query: Mapping, lanes: Lanes) -> int | None:
    """The rollout `?lane=` names (its index, or a blind judge's label), or None."""
    raw = query.get("lane")
    return lanes.index_of(raw) if raw else None


def opened_turns(query: Mapping, shown: Sequence[Rollout], lanes: Lanes) -> tuple[int | None, dict | None]:
    """`?lane=<lane>&start=<turn>` (a search hit's link): that lane's turns box comes already
    open at that turn, so the page lands on its `#turn-<lane>-<turn>` anchor without a click."""
    lane = _lane_asked(query, lanes)
    if lane is None:
        return None, None
    rollout = next((r for r in shown if r.index == lane), None)
    if rollout is None:
        return None, None
    start = params.whole_or(query.get("start"), "start", default=0)
    content = RolloutContent.objects.only("rollout_id", "messages").filter(rollout_id=rollout.pk).first()
    messages = content.messages if content is not None and isinstance(content.messages, list) else []
    start = min(start, max(0, len(messages) - 1))
    return rollout.index, {
        "turns": to_turns(messages, start, start + TURNS_PER_PAGE),
        "n_messages": len(messages),
        "next_start": start + TURNS_PER_PAGE if start + TURNS_PER_PAGE < len(messages) else None,
    }


def hit_bar_of(query: Mapping, group: Group, shown: Sequence[Rollout], lanes: Lanes) -> tuple[int | None, dict | None]:
    """`?q=&mode=` beside `lane=` (a search hit's link): that lane's header carries the hit
    bar, which walks the rollout's hits (static/js/hits.js, the rollout-hits JSON); the lane
    index and the bar, or None. A query that cannot be searched is shown there instead
    (never a 500). `mode=adjudicate` is the page's own parameter, not a search mode: the
    query then is `auto`."""
    raw = query.get("q")
    lane = _lane_asked(query, lanes)
    rollout = next((r for r in shown if r.index == lane), None)
    if raw is None or rollout is None:
        return None, None
    mode = query.get("mode") or "auto"
    mode = "auto" if mode == "adjudicate" else mode
    error = ""
    try:
        parse_query(raw, mode=mode)
    except QueryError as exc:
        error = str(exc)
    start = params.whole_or(query.get("start"), "start", default=0)
    args = group_args(group)
    key = lanes.key(rollout.index)
    return rollout.index, {
        "q": raw,
        "mode": mode,
        "error": error,
        "start": start,
        "hit": params.whole_or(query.get("hit"), "hit", default=None),
        "hits_url": reverse("rollout-hits", args=[*args, key]),
        "turns_url": reverse("rollout-turns", args=[*args, key]),
        "search_url": reverse("search", args=[group.run.project.name]) + "?" + urlencode({"q": raw, "mode": mode}),
        "close_url": reverse("group", args=args) + "?" + urlencode({"lane": key, "start": str(start)}) + f"#turn-{key}-{start}",
    }
