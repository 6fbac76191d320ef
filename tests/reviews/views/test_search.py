"""The search API and page, and turning a search into cheat signals.

People (tests/conftest.py, tests/reviews/conftest.py): alice admin of acme; bob a reviewer
(sees no grader field, so no tier or cheat filter); erin an auditor (may filter by them and
turn a search into signals); carol admin of "other" only (acme is 404 for her); tess the
trainer (export only: no search).
Groups: g1@1 (graded: #0 T1, #1 T2, #3 T3 flagged cheat), g2@1, g3@1 in run r1 step 1; every
rollout ran `cat w.py`; g2@1's #2 also ran `git log -p`.
"""

from __future__ import annotations

import pytest
from django.db import connection

from grading.models import CheatDecision, Group
from reviews.services.search_signals import MAX_SIGNALS
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db

API = "/api/v1/search/"
PAGE = "/projects/acme/search/"


@pytest.fixture
def searchable(groups, acme):
    line = small_group("g4@2", step=2, instance_id="t-4", rewards=(0, 1))
    line["rollouts"][0]["messages"].append(
        {"role": "assistant", "content": "```bash\ngit log -p\n```", "action": "git log -p", "observation": "commit 1"}
    )
    ingest_groups(acme, line)
    return groups


def test_api_answers_one_result_per_rollout_with_hits(client, bob, searchable):
    client.force_login(bob)
    r = client.get(API, {"project": "acme", "q": "git log -p", "mode": "literal"})
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["count"] == 1 and body["count_capped"] is False and body["next"] is None
    assert body["indexed"] is True and body["pending"] == 0 and body["scan"] is None
    assert body["mode"] == "literal" and body["auto"] is False
    (result,) = body["results"]
    assert {k: result[k] for k in ("run", "step", "uid", "index", "passed")} == {
        "run": "r1",
        "step": 2,
        "uid": "g4@2",
        "index": 0,
        "passed": False,
    }
    hit = next(h for h in result["hits"] if h["where"] == "turn")
    assert hit["turn"] == 2 and hit["field"] == "content" and result["hit_count"] == len(result["hits"]) == 2
    assert hit["url"] == "/projects/acme/runs/r1/groups/g4@2/?lane=0&start=2&q=git+log+-p&mode=literal&hit=0#turn-0-2"
    assert "<mark>git log -p</mark>" in hit["snippet"]


def test_api_pages_with_a_cursor(client, bob, searchable):
    client.force_login(bob)
    seen, cursor = [], None
    while True:
        query = {"project": "acme", "q": "cat", "page_size": 4, **({"cursor": cursor} if cursor else {})}
        body = client.get(API, query).json()
        assert body["count"] == 12
        seen += [(x["uid"], x["index"]) for x in body["results"]]
        cursor = body["next"]
        if cursor is None:
            break
    assert len(seen) == 12 == len(set(seen))


@pytest.mark.parametrize(
    "query, field, message",
    [
        ({}, "q", "empty"),
        ({"q": ""}, "q", "empty"),
        ({"q": "x" * 1001}, "q", "longer than 1,000"),
        ({"q": '"git log'}, "q", "unclosed quote"),
        ({"q": "==", "mode": "words"}, "q", "no letters or digits"),
        ({"q": "git", "mode": "regex"}, "mode", "mode must be"),
    ],
)
def test_api_refuses_queries_it_cannot_search_with_422(client, bob, searchable, query, field, message):
    client.force_login(bob)
    r = client.get(API, {"project": "acme", **query})
    assert r.status_code == 422 and r.json()["field"] == field and message in r.json()["detail"]


@pytest.mark.parametrize(
    "query, field",
    [
        ({"step_min": "-1"}, "step_min"),
        ({"step_max": "²"}, "step_max"),
        ({"passed": "yes"}, "passed"),
        ({"run": "nope"}, "run"),
        ({"cursor": "abc"}, "cursor"),
        ({"page_size": "0"}, "page_size"),
        ({"cheat": "maybe"}, "cheat"),
    ],
)
def test_api_refuses_malformed_filters_with_400(client, erin, searchable, query, field):
    client.force_login(erin)
    r = client.get(API, {"project": "acme", "q": "cat", **query})
    assert r.status_code == 400 and r.json()["field"] == field, r.content


def test_reviewer_cannot_search_by_grader_fields(client, bob, erin, searchable):
    client.force_login(bob)  # bob is a reviewer: grader verdicts are hidden from his role
    for extra in ({"tier": "T3"}, {"cheat": "any"}):
        r = client.get(API, {"project": "acme", "q": "cat", **extra})
        assert r.status_code == 403 and r.json()["field"] in ("tier", "cheat")
    page = client.get(PAGE, {"q": "cat"}).content.decode()
    assert 'name="tier"' not in page and 'name="cheat"' not in page
    client.force_login(erin)  # erin the auditor sees verdicts
    body = client.get(API, {"project": "acme", "q": "cat", "tier": "T3"}).json()
    assert [(x["uid"], x["index"]) for x in body["results"]] == [("g1@1", 3)]
    body = client.get(API, {"project": "acme", "q": "cat", "cheat": "any"}).json()
    assert [(x["uid"], x["index"]) for x in body["results"]] == [("g1@1", 3)]


def test_scopes_are_the_projects_only(client, carol, alice, acme, other_project, searchable, trainer_token):
    ingest_groups(other_project, small_group("foreign@1", rewards=(1,)))
    client.force_login(carol)  # carol is admin of "other": acme does not exist for her
    assert client.get(API, {"project": "acme", "q": "cat"}).status_code == 404
    assert client.get(PAGE, {"q": "cat"}).status_code == 404
    body = client.get(API, {"project": "other", "q": "cat"}).json()
    assert [x["uid"] for x in body["results"]] == ["foreign@1"]
    client.force_login(alice)
    body = client.get(API, {"project": "acme", "q": "cat", "page_size": 100}).json()
    assert "foreign@1" not in {x["uid"] for x in body["results"]}
    # tess's trainer token may export, not search
    assert client.get(API, {"project": "acme", "q": "cat"}, HTTP_AUTHORIZATION=f"Token {trainer_token}").status_code == 403


def test_api_query_count_is_pinned(client, bob, searchable, django_assert_num_queries):
    client.force_login(bob)
    # session, user, project, membership; the project's runs; the backlog; the search (PostgreSQL: count and page;
    # SQLite: the candidates and their chunks); rollouts; bodies; the searcher's open blind assignments (lane labels);
    # PostgreSQL: 4 more for the planner's settings (grading.search.selectors._planned)
    from django.db import connection

    with django_assert_num_queries(11 + (4 if connection.vendor == "postgresql" else 0)):
        r = client.get(API, {"project": "acme", "q": "cat"})
    assert r.status_code == 200


def test_page_groups_results_and_escapes_snippets(client, bob, acme, searchable):
    line = small_group("x@1", instance_id="t-x", rewards=(1,))
    line["rollouts"][0]["messages"].append({"role": "assistant", "content": "<script>alert('cat')</script>"})
    ingest_groups(acme, line)
    client.force_login(bob)
    r = client.get(PAGE, {"q": "alert"})
    assert r.status_code == 200
    html = r.content.decode()
    assert "<script>alert" not in html and "&lt;script&gt;<mark>alert</mark>" in html
    assert (
        'data-testid="result-x@1-0"' in html
        and 'href="/projects/acme/runs/r1/groups/x@1/?lane=0&amp;start=2&amp;q=alert&amp;mode=auto&amp;hit=0#turn-0-2"' in html
    )
    if connection.vendor != "postgresql":
        assert 'data-testid="no-index"' in html  # `make run` (SQLite) says it has no index


def test_page_says_what_is_wrong_with_a_query(client, bob, searchable):
    client.force_login(bob)
    r = client.get(PAGE, {"q": '"unclosed'})
    assert r.status_code == 422 and "unclosed quote" in r.content.decode()
    r = client.get(PAGE, {"q": "x" * 1001})
    assert r.status_code == 422 and "longer than 1,000" in r.content.decode()
    r = client.get(PAGE)
    assert r.status_code == 200 and 'data-testid="search-form"' in r.content.decode()


def test_nav_has_a_search_box(client, bob, searchable):
    client.force_login(bob)
    html = client.get("/projects/acme/review/").content.decode()
    assert 'data-testid="nav-search-q"' in html and 'action="/projects/acme/search/"' in html


def test_auditor_turns_a_search_into_cheat_signals_once(client, erin, searchable):
    client.force_login(erin)
    form = {"q": "git log -p", "mode": "literal"}
    r = client.post("/projects/acme/search/signals/", form)
    assert r.status_code == 302 and r["Location"] == "/projects/acme/audit/?status=pending&source=search"
    (signal,) = CheatDecision.objects.filter(source="search")
    assert (signal.rollout.group.uid, signal.rollout.index, signal.reason, signal.confirmed) == (
        "g4@2",
        0,
        "git log -p (literal)",
        None,
    )
    # the same search again adds nothing; the audit queue lists it under its source
    client.post("/projects/acme/search/signals/", form)
    assert CheatDecision.objects.filter(source="search").count() == 1
    queue = client.get("/projects/acme/audit/", {"status": "pending", "source": "search"}).content.decode()
    assert f'data-testid="signal-{signal.pk}"' in queue and "git log -p (literal)" in queue and signal.author == "erin"


def test_signals_are_refused_above_the_cap_all_or_none(client, erin, acme, searchable, monkeypatch):
    monkeypatch.setattr("reviews.services.search_signals.MAX_SIGNALS", 3)
    client.force_login(erin)
    r = client.post("/projects/acme/search/signals/", {"q": "cat"}, follow=True)
    assert "more than 3 rollouts match" in r.content.decode()
    assert not CheatDecision.objects.filter(source="search").exists()
    assert MAX_SIGNALS == 500


def test_only_auditors_and_admins_create_signals(client, bob, fay, searchable):
    for person in (bob, fay):  # a reviewer and an adjudicator hold no audit capability
        client.force_login(person)
        assert client.post("/projects/acme/search/signals/", {"q": "cat"}).status_code == 403
    assert not CheatDecision.objects.filter(source="search").exists()
    assert client.get("/projects/acme/search/signals/").status_code == 405


def test_group_page_opens_a_lane_at_a_turn(client, bob, searchable):
    client.force_login(bob)
    group = Group.objects.get(uid="g4@2")
    html = client.get(f"/projects/acme/runs/r1/groups/{group.uid}/", {"lane": "0", "start": "2"}).content.decode()
    assert 'id="turn-0-2"' in html and "git log -p" in html
    html = client.get(f"/projects/acme/runs/r1/groups/{group.uid}/", {"lane": "x", "start": "²"}).content.decode()
    assert 'id="turn-0-2"' not in html  # unreadable: the page as usual
