"""The group page's addresses of search hits (reviews/presenters/search_links.py), from the
data grading's search gives each hit: no database, a rollout of group "a/b@1" in run r1 of acme."""

from __future__ import annotations

from types import SimpleNamespace

from grading.search.selectors import SearchHit, SearchPage, SearchResult
from reviews.presenters.search_links import linked_page

ROLLOUT = SimpleNamespace(
    index=0, group=SimpleNamespace(uid="a/b@1", run=SimpleNamespace(name="r1", project=SimpleNamespace(name="acme")))
)
GROUP = "/projects/acme/runs/r1/groups/a/b@1/"


def hit(link: dict, anchor: str) -> SearchHit:
    return SearchHit("turn", "content", 2, "", None, "<mark>git</mark>", "git", link, anchor)


def page(*results: SearchResult) -> SearchPage:
    return SearchPage(count=len(results), count_capped=False, results=list(results), next_cursor=None, indexed=True)


def test_each_hit_links_to_its_place_and_the_result_walks_from_the_first():
    first = hit({"lane": "C", "start": 2, "q": "git log", "mode": "literal", "hit": 0}, "turn-C-2")
    second = hit({"lane": "C", "q": "git log", "mode": "literal", "hit": 1}, "tests-C")
    (result,) = linked_page(page(SearchResult(ROLLOUT, [first, second], lane="C"))).results
    assert [h.url for h in result.hits] == [
        f"{GROUP}?lane=C&start=2&q=git+log&mode=literal&hit=0#turn-C-2",
        f"{GROUP}?lane=C&q=git+log&mode=literal&hit=1#tests-C",
    ]
    assert result.hits_url == result.hits[0].url
    assert first.url == ""  # the selector's hit is left as it was


def test_a_result_without_hits_shown_opens_the_hit_bar_on_its_rollout():
    walk = {"lane": "0", "q": "git", "mode": "auto"}
    (result,) = linked_page(page(SearchResult(ROLLOUT, [], walk_link=walk))).results
    assert result.hits_url == f"{GROUP}?lane=0&q=git&mode=auto#rollout-0"
