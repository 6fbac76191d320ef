"""The group page's addresses of search hits: grading's search reads hits and says where each
points (a query string and a fragment); the review desk, whose group page it is, makes the URL."""

from __future__ import annotations

from dataclasses import replace

from django.urls import reverse
from django.utils.http import urlencode

from grading.models import Rollout
from grading.search.selectors import SearchHit, SearchPage, SearchResult


def group_url(rollout: Rollout, query: dict, anchor: str) -> str:
    """The group page of `rollout` (with group__run__project) with this query string and fragment."""
    group = rollout.group
    return reverse("group", args=[group.run.project.name, group.run.name, group.uid]) + "?" + urlencode(query) + "#" + anchor


def linked_hit(rollout: Rollout, hit: SearchHit) -> SearchHit:
    return replace(hit, url=group_url(rollout, hit.link, hit.anchor))


def linked_hits(rollout: Rollout, hits: list[SearchHit]) -> list[SearchHit]:
    return [linked_hit(rollout, hit) for hit in hits]


def linked_result(result: SearchResult) -> SearchResult:
    """The result with its hits' URLs, and `hits_url`: the first hit's, or the group page with
    the hit bar on the rollout when it has no hit shown."""
    hits = linked_hits(result.rollout, result.hits)
    walk = hits[0].url if hits else group_url(result.rollout, result.walk_link, f"rollout-{result.walk_link['lane']}")
    return replace(result, hits=hits, hits_url=walk)


def linked_page(page: SearchPage) -> SearchPage:
    return replace(page, results=[linked_result(result) for result in page.results])
