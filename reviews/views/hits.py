"""GET .../groups/<uid>/rollouts/<index>/hits/?q=&mode=&offset=&limit=[&turn=]: one rollout's
search hits as JSON, a page at a time, for the group page's hit bar (static/js/hits.js).

The same access as the group page and its rollout partials (grading.projects.access.page_group,
capability `view`): hits are the rollout's own text (turns, patch, test ids), never a grader
field, so a blind reviewer may walk them too. A query that cannot be searched is a 422
naming `q` or `mode`; a malformed number a 400 naming it. Every text in the answer is data:
the page puts it in with textContent, never as HTML (`snippet` is escaped with <mark>, for
other clients).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from grading.formats import params
from grading.models import Capability
from grading.projects.access import page_group
from grading.search.query import QueryError, parse_query
from grading.templatetags.gagar import patch_anchor
from reviews.presenters import search_links
from reviews.selectors.hits import MAX_PAGE, PAGE, hit_page, rollout_of
from reviews.selectors.lanes import lanes_for


def _query(query) -> dict:
    """What the page marks: the exact text (literal), or the words and prefixes (any case)."""
    words = [t for term in query.terms if term.kind != "prefix" for t in term.tokens]
    prefixes = [term.tokens[0] for term in query.terms if term.kind == "prefix"]
    return {
        "raw": query.raw,
        "mode": query.mode,
        "auto": query.auto,
        "literal": query.literal,
        "words": list(dict.fromkeys(words)),
        "prefixes": list(dict.fromkeys(prefixes)),
    }


def _hit(number: int, hit, lane: str) -> dict:
    anchor = patch_anchor(lane, hit.path, hit.line) if hit.where == "patch" and hit.line else None
    return {
        "number": number,
        "where": hit.where,
        "field": hit.field,
        "label": hit.label,
        "turn": hit.turn,
        "path": hit.path,
        "line": hit.line,
        "anchor": anchor,
        "occurrences": hit.occurrences,
        "text": hit.text,
        "snippet": str(hit.snippet),
        "url": hit.url,
    }


@login_required
@require_GET
def rollout_hits(request: HttpRequest, project: str, run: str, uid: str, lane: str) -> JsonResponse:
    group, _ = page_group(request, project, run, uid, Capability.VIEW)
    lanes = lanes_for(user=request.user, group=group)  # a blind judge names rollouts by label (reviews.selectors.lanes)
    index = lanes.index_of(lane)
    if index is None:
        raise Http404("No such rollout in this group")
    rollout = rollout_of(group, index)
    try:
        query = parse_query(request.GET.get("q"), mode=request.GET.get("mode") or "auto")
    except QueryError as exc:
        return JsonResponse({"detail": str(exc), "field": exc.field}, status=422)
    try:
        offset = params.optional_whole(request.GET.get("offset"), "offset") or 0
        limit = params.optional_whole(request.GET.get("limit"), "limit", minimum=1, maximum=MAX_PAGE) or PAGE
        turn = params.optional_whole(request.GET.get("turn"), "turn")
    except params.ParamError as exc:
        return JsonResponse({"detail": str(exc), "field": exc.name}, status=400)
    page = hit_page(query=query, rollout=rollout, offset=offset, limit=limit, turn=turn, lane=lanes.key(index))
    return JsonResponse(
        {
            "total": page.total,
            "complete": page.complete,
            "offset": page.offset,
            "limit": limit,
            "at": page.at,
            "query": _query(query),
            "hits": [
                _hit(page.offset + n, hit, lanes.key(index)) for n, hit in enumerate(search_links.linked_hits(rollout, page.hits))
            ],
        }
    )
