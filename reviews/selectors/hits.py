"""One rollout's search hits, a page at a time, for the group page's hit bar (the hit-by-hit
walk of a search result): grading.search.selectors finds them; this pages them, and finds
the hit a link means when it names a turn but not a hit's number (the results page links a
hit as `?lane=&start=<turn>`).

A request reads the rollout once and spends one scan budget on it (text.SCAN_BUDGET work
units: characters read times the query's cost), whatever it asks for: every hit is found in
that one pass (`every_rollout_hit`), then the page is cut from them, or the first hit at or
after the turn is looked up among them, and only the page's hits are given their links.
Hits come in a fixed order (grading.search.text.parts): the patch's, then the test ids',
then the turns' in turn order.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.shortcuts import get_object_or_404

from grading.models import Rollout
from grading.search.query import Query
from grading.search.selectors import SearchHit, every_rollout_hit, linked_hits
from grading.search.text import Hit

PAGE = 50
MAX_PAGE = 200


@dataclass
class HitPage:
    hits: list[SearchHit]  # hits offset .. offset + len(hits) - 1
    offset: int
    total: int  # hits (fields holding the query) in the whole rollout, as far as it was read
    complete: bool  # False: the reading budget ran out; there may be more past `total`
    at: int | None = None  # the number of the hit at or after the turn asked for, when one was


def _from_turn(hit: Hit, turn: int) -> bool:
    return hit.where == "turn" and hit.turn is not None and hit.turn >= turn


def hit_page(
    *, query: Query, rollout: Rollout, offset: int = 0, limit: int = PAGE, turn: int | None = None, lane: str | None = None
) -> HitPage:
    """The hits `offset` to `offset + limit` of `rollout` (with group__run__project). With
    `turn`, the page holding the first hit in that turn or after it instead (`at` is its
    number; the rollout's last hit when none is that late, None when it has none). `lane`:
    how the hits' links name the rollout (a blind judge's label), its index by default."""
    limit = max(1, min(limit, MAX_PAGE))
    found = every_rollout_hit(query=query, rollout=rollout)
    at = None
    if turn is not None:
        at = next((n for n, hit in enumerate(found.hits) if _from_turn(hit, turn)), None)
        if at is None and found.total:
            at = found.total - 1
        offset = 0 if at is None else at // limit * limit
    page = linked_hits(query=query, rollout=rollout, hits=found.hits[offset : offset + limit], offset=offset, lane=lane)
    return HitPage(page, offset, found.total, found.complete, at)


def rollout_of(group, index: int) -> Rollout:
    """The group's rollout `index` (404 when it has none), with the page's copy of `group`
    (its run and project already loaded)."""
    rollout = get_object_or_404(Rollout, group=group, index=index)
    rollout.group = group
    return rollout
