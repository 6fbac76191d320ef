"""One rollout's search hits, a page at a time, for the group page's hit bar (the hit-by-hit
walk of a search result): grading.search.selectors.rollout_hits finds them; this pages them,
and finds the hit a link means when it names a turn but not a hit's number (the results
page links a hit as `?lane=&start=<turn>`).

Hits come in a fixed order (grading.search.text.parts): the patch's, then the test ids',
then the turns' in turn order. So the first hit at or after a turn is found by bisecting
their numbers, reading one hit a probe: at most 2 + log2(total) reads of the rollout, each
bounded by text.SCAN_BUDGET characters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from grading.models import Rollout
from grading.search.query import Query
from grading.search.selectors import SearchHit
from grading.search.selectors import rollout_hits as _rollout_hits

PAGE = 50
MAX_PAGE = 200


@dataclass
class HitPage:
    hits: list[SearchHit]  # hits offset .. offset + len(hits) - 1
    offset: int
    total: int  # hits (fields holding the query) in the whole rollout, as far as it was read
    complete: bool  # False: the reading budget ran out; there may be more past `total`
    at: int | None = None  # the number of the hit at or after the turn asked for, when one was


def _from_turn(hit: SearchHit, turn: int) -> bool:
    return hit.where == "turn" and hit.turn is not None and hit.turn >= turn


def hit_page(*, query: Query, rollout: Rollout, offset: int = 0, limit: int = PAGE, turn: int | None = None,
             lane: str | None = None) -> HitPage:
    """The hits `offset` to `offset + limit` of `rollout` (with group__run__project). With
    `turn`, the page holding the first hit in that turn or after it instead (`at` is its
    number; the rollout's last hit when none is that late, None when it has none). `lane`:
    how the hits' links name the rollout (a blind judge's label), its index by default."""
    limit = max(1, min(limit, MAX_PAGE))
    rollout_hits = partial(_rollout_hits, lane=lane)
    if turn is None:
        hits, found = rollout_hits(query=query, rollout=rollout, offset=offset, limit=limit)
        return HitPage(hits, offset, found.total, found.complete)
    hits, found = rollout_hits(query=query, rollout=rollout, offset=0, limit=limit)
    at = next((n for n, hit in enumerate(hits) if _from_turn(hit, turn)), None)
    if at is not None or found.total <= limit:
        if at is None and found.total:
            at = found.total - 1
        return HitPage(hits, 0, found.total, found.complete, at)
    low, high = limit, found.total  # the first page holds no hit from `turn`: bisect the rest
    while low < high:
        middle = (low + high) // 2
        probe, _ = rollout_hits(query=query, rollout=rollout, offset=middle, limit=1)
        if probe and _from_turn(probe[0], turn):
            high = middle
        else:
            low = middle + 1
    at = min(low, found.total - 1)
    offset = at // limit * limit
    hits, found = rollout_hits(query=query, rollout=rollout, offset=offset, limit=limit)
    return HitPage(hits, offset, found.total, found.complete, at)
