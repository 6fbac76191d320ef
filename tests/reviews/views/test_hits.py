"""One rollout's search hits (the group page's hit bar): the JSON endpoint and the bar itself.

People (tests/conftest.py): bob a reviewer in acme; carol admin of "other" only (acme is 404
for her). The group walk@1's rollout #1 runs `git log -p` at every other message from 2 to 60
(content and command: two hits a turn, 60 in all), after a patch line holding it too.
"""

from __future__ import annotations

import pytest

from grading.search.query import parse_query
from grading.search.text import find_hits
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db

HITS = "/projects/acme/runs/r1/groups/walk@1/rollouts/1/hits/"
PAGE = "/projects/acme/runs/r1/groups/walk@1/"
RUN_AT = range(2, 61, 2)


@pytest.fixture
def walk(acme):
    line = small_group("walk@1", rewards=(1, 0))
    rollout = line["rollouts"][1]
    rollout["patch"] += "+# run git log -p first\n"
    messages = rollout["messages"]
    while len(messages) < 62:
        n = len(messages)
        if n in RUN_AT:
            messages.append({"role": "assistant", "content": f"step {n}\n```bash\ngit log -p\n```", "action": "git log -p"})
        else:
            messages.append({"role": "user", "content": f"output {n}"})
    ingest_groups(acme, line)
    return rollout


def expected(rollout, raw="git log -p", mode="auto"):
    return find_hits(parse_query(raw, mode=mode), rollout["messages"], rollout["patch"], rollout["tests"], limit=10_000).hits


def test_a_page_of_hits_with_the_total(client, bob, walk):
    client.force_login(bob)
    r = client.get(HITS, {"q": "git log -p", "offset": 10, "limit": 5})
    assert r.status_code == 200, r.content
    body = r.json()
    assert (body["total"], body["complete"], body["offset"], body["limit"], body["at"]) == (61, True, 10, 5, None)
    assert body["query"] == {
        "raw": "git log -p",
        "mode": "literal",
        "auto": True,
        "literal": "git log -p",
        "words": [],
        "prefixes": [],
    }
    want = expected(walk)[10:15]
    assert [(h["number"], h["where"], h["field"], h["turn"]) for h in body["hits"]] == [
        (10 + n, h.where, h.field, h.turn) for n, h in enumerate(want)
    ]
    hit = body["hits"][0]
    assert hit["url"] == (f"{PAGE}?lane=1&start={hit['turn']}&q=git+log+-p&mode=auto&hit=10#turn-1-{hit['turn']}")
    assert hit["text"].endswith("git log -p") and "<mark>git log -p</mark>" in hit["snippet"]


def test_the_patch_hit_names_its_row(client, bob, walk):
    client.force_login(bob)
    (hit,) = client.get(HITS, {"q": "git log -p", "limit": 1}).json()["hits"]
    assert (hit["where"], hit["path"], hit["line"]) == ("patch", "w.py", 3)
    assert hit["anchor"].startswith("p1-") and hit["anchor"].endswith("-3") and hit["url"].endswith("#" + hit["anchor"])


@pytest.mark.parametrize("turn", [0, 2, 3, 40, 60])
def test_a_turn_finds_the_page_of_its_first_hit(client, bob, walk, turn):
    client.force_login(bob)
    body = client.get(HITS, {"q": "git log -p", "turn": turn, "limit": 10}).json()
    hits = expected(walk)
    at = next(n for n, h in enumerate(hits) if h.where == "turn" and h.turn >= turn)
    assert body["at"] == at and body["offset"] == at // 10 * 10
    assert body["hits"][at - body["offset"]]["turn"] == hits[at].turn


def test_a_request_reads_the_rollout_once_whatever_it_asks(client, bob, walk):
    """One read, one scan budget per request: finding turn 60's page used to bisect the hits,
    reading the whole rollout again at every probe (2 + log2(61) reads)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(bob)
    for ask in ({"turn": 60, "limit": 5}, {"offset": 50, "limit": 5}):
        with CaptureQueriesContext(connection) as queries:
            body = client.get(HITS, {"q": "git log -p", **ask}).json()
        reads = [q["sql"] for q in queries.captured_queries if "grading_rolloutcontent" in q["sql"]]
        assert len(reads) == 1 and body["total"] == 61, (ask, reads)


def test_a_turn_past_every_hit_is_the_last_hit_and_none_is_none(client, bob, walk):
    client.force_login(bob)
    assert client.get(HITS, {"q": "git log -p", "turn": 61, "limit": 7}).json()["at"] == 60
    body = client.get(HITS, {"q": "nothing-like-this", "turn": 5}).json()
    assert (body["total"], body["at"], body["hits"]) == (0, None, [])


def test_words_are_given_for_marking(client, bob, walk):
    client.force_login(bob)
    body = client.get(HITS, {"q": 'STEP "git log" lo*', "mode": "words"}).json()
    assert body["query"]["words"] == ["step", "git", "log"] and body["query"]["prefixes"] == ["lo"]
    assert body["total"] == len(expected(walk, 'STEP "git log" lo*', "words"))


@pytest.mark.parametrize(
    ("query", "status", "field"),
    [
        ({"q": ""}, 422, "q"),
        ({"q": '"open'}, 422, "q"),
        ({"q": "x", "mode": "regex"}, 422, "mode"),
        ({"q": "x", "offset": "-1"}, 400, "offset"),
        ({"q": "x", "limit": "500"}, 400, "limit"),
        ({"q": "x", "turn": "²"}, 400, "turn"),
    ],
)
def test_what_cannot_be_read_is_said(client, bob, walk, query, status, field):
    client.force_login(bob)
    r = client.get(HITS, query)
    assert r.status_code == status and r.json()["field"] == field


def test_the_group_pages_access(client, carol, walk):
    assert client.get(HITS, {"q": "git"}).status_code == 302  # to the login page
    client.force_login(carol)
    assert client.get(HITS, {"q": "git"}).status_code == 404
    assert client.get(PAGE, {"q": "git", "lane": 1}).status_code == 404


def test_no_such_rollout_is_404(client, bob, walk):
    client.force_login(bob)
    assert client.get(HITS.replace("/1/hits/", "/9/hits/"), {"q": "git"}).status_code == 404


def test_the_hit_bar_is_in_the_lane_of_the_link(client, bob, walk):
    client.force_login(bob)
    html = client.get(PAGE, {"lane": 1, "start": 40, "q": "git log -p", "mode": "auto"}).content.decode()
    assert html.count("data-hit-bar") == 1 and 'class="lanes hit-pane"' in html
    bar = html[html.index("data-hit-bar") :]
    assert 'data-lane="1"' in bar[:300] and 'data-start="40"' in bar and f'data-hits-url="{HITS}"' in bar
    assert 'id="turn-1-40"' in html  # the lane's turns open at the turn
    plain = client.get(PAGE, {"lane": 1, "start": 40}).content.decode()
    assert "data-hit-bar" not in plain and "hit-pane" not in plain


def test_a_query_the_bar_cannot_search_is_said_there(client, bob, walk):
    client.force_login(bob)
    r = client.get(PAGE, {"lane": 1, "q": '"<b>open', "mode": "words"})
    assert r.status_code == 200
    html = r.content.decode()
    assert 'data-testid="hit-error"' in html and "unclosed quote" in html
    assert "<b>open" not in html and "&lt;b&gt;open" in html
