"""Blind to the side: a person judging a blind comparison's group learns from no door which run
(or checkpoint) a rollout came from -- not the runs' names, the sides' labels, the source groups
or the steps they were sampled at, and not an index that lists one side first.

A project's pages list its runs by name wherever they list runs; what would tie a lane to one
is a side's label, a source rollout's name or group, or a run's name on the group's own pages
and in search results. The doors are every GET route (tests/hostile/test_blind_doors.py enumerates them from the URL
resolver), as a page and as an htmx partial, filled in for the comparison's run, the group the
judge holds and their lanes, and for the comparison's own pages. The runs are real
(mini-swe-agent trajectories of real length, tests.helpers.comparisons), one step each, so the
only twins of a lane's text in the project are the rollouts it was copied from.

bob (reviewer) judges one cross-run group blind; alice (admin) built the comparison and sees
everything.
"""

from __future__ import annotations

import re

import pytest

from grading.comparisons.services import create_comparison
from grading.models import ComparisonEntry, Group
from reviews.models import Assignment
from reviews.selectors.lanes import lanes_for
from reviews.services.queue import assign, update_policy
from tests.helpers.comparisons import side_groups
from tests.helpers.ingest import ingest_groups
from tests.helpers.routes import DOOR_QUERY, QUERY, doors
from tests.hostile.test_producer_blind_doors import NAMED

pytestmark = pytest.mark.django_db
A, B = "run-alpha-seven", "run-omega-three"


@pytest.fixture
def world(acme, alice, bob):
    ingest_groups(acme, *side_groups(A, offset=0, steps=(2,)), *side_groups(B, offset=8, steps=(2,)))
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    comparison = create_comparison(project=acme, body={"name": "final", "a": {"run": A}, "b": {"run": B}, "per_side": 2})
    group = Group.objects.filter(run=comparison.run).order_by("-n_rollouts", "uid").first()
    assign(group=group, reviewer=bob)
    assert Assignment.objects.get(group=group, reviewer=bob).blind
    entries = ComparisonEntry.objects.filter(comparison=comparison).select_related("source__group")
    # A project's run list names its runs anywhere; what ties a lane to one is a side's label, a
    # source's name or its group; and on the group's own pages, a run's name at all.
    forbidden = {comparison.label_a, comparison.label_b, "@2/"}
    forbidden |= {e.source_label for e in entries} | {e.source.group.uid for e in entries}
    assert {e.side for e in entries if e.rollout.group_id == group.pk} == {"a", "b"}
    # a word of the held group's first patch that is in no rollout of the project outside the
    # group and its sources: a search for it finds the group, and would find the sources
    copy = group.rollouts.select_related("content").order_by("index").first()
    path = re.search(r"^\+\+\+ b/(\S+)", copy.content.patch, re.M).group(1)
    return {"comparison": comparison, "group": group, "forbidden": forbidden, "word": path.rsplit("/", 1)[-1]}


def _body(r) -> str:
    return (b"".join(r.streaming_content) if r.streaming else r.content).decode()


@pytest.mark.slow
def test_no_door_shows_a_blind_judge_which_run_a_rollout_came_from(client, bob, world):
    group, forbidden = world["group"], world["forbidden"]
    lanes = lanes_for(user=bob, group=group)
    assert lanes.blind
    client.force_login(bob)
    opened = 0
    for name, url in doors(lanes.key(1), run="final", uid=group.uid, name="final"):
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            extra = DOOR_QUERY.get(name, "").replace("w.py", world["word"]) + f"&a={lanes.key(0)}&b={lanes.key(1)}"
            query = QUERY.replace("run=r1", "run=final")
            r = client.get(url + query + extra, **headers)
            if r.status_code in (403, 404, 405):
                continue
            assert r.status_code in (200, 302), (name, r.status_code)
            body = _body(r)
            opened += 1
            for value in forbidden | ({A, B} if f"/{group.uid}/" in url else set()):
                assert value not in body, (name, value)
            if f"/{group.uid}/" in url:  # (search names the group's lanes: the test below)
                for pattern in NAMED:  # every name of a rollout is a label, never an index
                    for named in pattern.findall(body):
                        assert named == "" or named.isalpha(), (name, pattern.pattern, named)
    assert opened >= 20


def test_search_finds_the_lane_and_not_the_rollout_it_was_copied_from(client, bob, alice, world):
    group, word = world["group"], world["word"]
    sources = {
        (e.source.group.run.name, e.source.group.uid, e.source.index)
        for e in ComparisonEntry.objects.filter(rollout__group=group).select_related("source__group__run")
    }

    def named(results: list[dict]) -> set[tuple]:
        return {(r["run"], r["uid"], r.get("index")) for r in results}

    client.force_login(alice)
    seen = client.get("/api/v1/search/", {"project": "acme", "q": word, "mode": "words"}).json()["results"]
    assert named(seen) & sources  # an admin finds the sources as well as the copies
    client.force_login(bob)
    found = client.get("/api/v1/search/", {"project": "acme", "q": word, "mode": "words"}).json()["results"]
    # (other attempts in the source groups may match too: both runs hold every task, so a hit
    # on one says nothing of a lane's side; the rollouts copied are what would)
    assert not named(found) & sources
    held = [r for r in found if r["uid"] == group.uid]
    assert held and all(r["lane"].isalpha() and "index" not in r for r in held)


def test_the_comparison_pages_withhold_sides_and_figures_until_the_judge_has_judged(client, bob, alice, world):
    client.force_login(bob)
    html = client.get("/projects/acme/comparisons/").content.decode()
    assert "withheld while you judge it blind" in html and A not in html
    html = client.get("/projects/acme/comparisons/final/").content.decode()
    assert 'data-testid="comparison-withheld"' in html and "comparison-figures" not in html
    r = client.get("/api/v1/comparisons/final/", {"project": "acme"})
    assert r.status_code == 403 and "blind" in r.json()["detail"]
    assert "sides" not in client.get("/api/v1/comparisons/", {"project": "acme"}).json()[0]
    client.force_login(alice)
    html = client.get("/projects/acme/comparisons/final/").content.decode()
    assert f"{A}@2" in html and f"{B}@2" in html
