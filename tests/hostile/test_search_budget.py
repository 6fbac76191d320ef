"""Search hit-finding has a budget in work, whatever the query's terms (second security review).

The review's attack: one rollout holding a 2 MB run of `a` and a reviewer's 16-term search
(`a`, `aa`, … sixteen `a`s): the hit finder tried each term at every position in Python,
18 s on the API and 23 s on the page. Now a term is one linear regular expression, and the
budget counts characters read times what each character may cost the query
(query.scan_cost), so more or longer terms read less of a rollout, not more work; the
rollouts whose hits were not all found say so.
"""

from __future__ import annotations

import time

import pytest
from django.db import connection

from grading.search.query import parse_query, scan_cost
from grading.search.selectors import PAGE_SCAN_BUDGET
from grading.search.text import SCAN_BUDGET, find_hits
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db

RUN = "a" * 2_000_000
SIXTEEN = " ".join("a" * k for k in range(1, 17))


@pytest.fixture
def bomb(acme):
    """A rollout whose one message is the 2 MB run and then every term of the review's query:
    it matches, and each term's first occurrence lies past the run."""
    group = small_group("bomb@1", rewards=(1,))
    group["rollouts"][0]["messages"].append({"role": "user", "content": f"{RUN} {SIXTEEN}"})
    ingest_groups(acme, group)


def test_the_cost_grows_with_the_terms_so_the_characters_read_shrink():
    one, sixteen = parse_query("a"), parse_query(SIXTEEN, mode="words")
    assert scan_cost(parse_query("git log -p", mode="literal")) == 1
    assert scan_cost(one) == 3 and scan_cost(sixteen) == sum(2 * k + 1 for k in range(1, 17))
    messages = [{"role": "user", "content": RUN}, {"role": "user", "content": SIXTEEN}]
    started = time.monotonic()
    found = find_hits(sixteen, messages, "", {})
    took = time.monotonic() - started
    # the run is read only as far as the budget goes (64 M units / 288 a character: 222 k
    # characters of it); the later message is not reached, and that is said
    assert not found.complete and found.total == 0
    assert find_hits(sixteen, messages, "", {}, budget=10**12).total == 1  # given the work, it is there
    assert took < 5, took  # the review measured 18 s; about 0.2 s here unloaded


def test_the_review_s_sixteen_term_search_answers_and_says_the_hits_were_cut(client, alice, acme, bomb):
    client.force_login(alice)
    started = time.monotonic()
    r = client.get("/api/v1/search/", {"project": "acme", "q": SIXTEEN, "mode": "words"})
    api = time.monotonic() - started
    assert r.status_code == 200
    body = r.json()
    if connection.vendor == "postgresql":  # the word index says it matches; its hits are cut at the budget
        (result,) = body["results"]
        assert result["hits_complete"] is False  # (the test id `t::a` holds the word `a`: that one is found)
        assert all(hit["where"] != "turn" for hit in result["hits"])
        said = "in the part read"
    else:  # SQLite checks candidates in Python: this one is more than a search may read, and it says so
        assert body["results"] == [] and body["scan_capped"] is True
        said = "not every candidate was read"
    started = time.monotonic()
    r = client.get("/projects/acme/search/", {"q": SIXTEEN, "mode": "words"})
    page = time.monotonic() - started
    assert r.status_code == 200 and said in r.content.decode()
    # generous bounds for a loaded shared machine: the review measured 18 s and 23 s
    assert api < 10 and page < 10, (api, page)
    assert PAGE_SCAN_BUDGET <= 64_000_000 and SCAN_BUDGET <= 64_000_000


@pytest.mark.parametrize("tier", ["T9", "t1", "T"])
def test_an_unknown_tier_is_refused_naming_it_on_the_api_and_the_page(client, alice, acme, tier):
    # the review: `tier=T9` (or `t1`) from an admin was a 500 on both, every time
    client.force_login(alice)
    r = client.get("/api/v1/search/", {"project": "acme", "q": "widget", "tier": tier})
    assert r.status_code == 400 and r.json()["field"] == "tier" and "T1, T2, T3" in r.json()["detail"]
    r = client.get("/projects/acme/search/", {"q": "widget", "tier": tier})
    assert r.status_code == 422 and "tier must be one of T1, T2, T3" in r.content.decode()
