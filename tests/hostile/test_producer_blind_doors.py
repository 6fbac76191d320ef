"""Blind to the producer: a person judging a group blind learns from no door which
model or agent made which rollout -- not its source, cost or producer metadata, and not its
index, which batches a multi-model run's rollouts by model.

The doors are every GET route (tests/hostile/test_blind_doors.py enumerates them from the
URL resolver), as a page and as an htmx partial, filled in for the blind judge's lanes. The
group is real (long mini-swe-agent trajectories) with rollouts 0-2 from one model and 3-5
from another: `source.ref` under `results_claude_10/` or `results_gpt5_snowflake/`, model,
agent config and checkpoint in metadata, each model's cost (tests.helpers.real_groups.multi_model_group).

bob (reviewer) judges g1@1 blind; alice (admin) does not judge it and sees everything.
"""

from __future__ import annotations

import json
import re

import pytest

from grading.models import Group
from reviews.models import Assignment
from reviews.selectors.lanes import lanes_for
from reviews.services.queue import assign, update_policy
from tests.helpers.desk import as_lanes
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import multi_model_group, producer_values
from tests.helpers.routes import DOOR_QUERY, QUERY, doors

pytestmark = pytest.mark.django_db

# Where a rollout's name sits in the HTML: ids, partial URLs, ?lane=, data attributes, form fields.
NAMED = [
    re.compile(p)
    for p in (
        r'id="(?:rollout|turns|diff|log|tests|more)-([^"-]+)',
        r'id="turn-([^"-]+)-\d+"',
        r'/rollouts/([^/"]+)/',
        r'[?&](?:amp;)?lane=([^&"#]+)',
        r'#(?:rollout|turn|tests|diff)-([^"-]+)',
        r'data-(?:index|lane|lane-link|judge|jump|cluster)="([^"]*)"',
        r'name="(?:tier|rank|cheat|note|score)-([^"-]+)',
        r'data-testid="(?:overview-row|tier|rank|cheat|pin|turns|cluster|split|load-diff|turn-search|turn-jump)-([^"-]+)',
    )
]


@pytest.fixture
def world(acme, alice, bob):
    line = multi_model_group()
    text = json.dumps([r["messages"] for r in line["rollouts"]] + [r["patch"] for r in line["rollouts"]])
    forbidden = producer_values(line)
    assert not [v for v in forbidden if v in text]  # the trajectory text (shown as it is) names none of them
    ingest_groups(acme, line)
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    group = Group.objects.get(uid="g1@1")
    assign(group=group, reviewer=bob)
    assert Assignment.objects.get(group=group, reviewer=bob).blind
    return {"group": group, "forbidden": forbidden}


def _body(r) -> str:
    return (b"".join(r.streaming_content) if r.streaming else r.content).decode()


@pytest.mark.slow
def test_no_door_shows_a_blind_judge_who_made_a_rollout(client, bob, world):
    group, forbidden = world["group"], world["forbidden"]
    lanes = lanes_for(user=bob, group=group)
    assert lanes.blind and sorted(lanes.labels.values()) == list("ABCDEF")
    client.force_login(bob)
    opened = 0
    for name, url in doors(lanes.key(1)):
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            extra = DOOR_QUERY.get(name, "").replace("w.py", "django") + f"&a={lanes.key(0)}&b={lanes.key(4)}"
            r = client.get(url + QUERY + extra, **headers)
            if r.status_code in (403, 404, 405):
                continue
            assert r.status_code in (200, 302), (name, r.status_code)
            body = _body(r)
            opened += 1
            for value in forbidden:
                assert value not in body, (name, value)
            if "g1@1" in url or name in ("search", "api-search"):
                for pattern in NAMED:  # every name of a rollout is a label, never an index
                    for named in pattern.findall(body):
                        assert named == "" or named.isalpha(), (name, pattern.pattern, named)
    assert opened >= 20


def test_the_group_page_shows_lanes_a_to_f_and_the_grader_free_rest_of_a_rollout(client, bob, alice, world):
    group = world["group"]
    client.force_login(bob)
    html = client.get("/projects/acme/runs/r1/groups/g1@1/").content.decode()
    heads = re.findall(r'<h2>(\w+) <span class="badge (pass|fail)', html)
    assert [h for h, _ in heads] == list("ABCDEF")  # passing first, in bob's shuffle
    assert [o for _, o in heads] == ["pass"] * 5 + ["fail"]
    assert "source" not in re.findall(r"<dt>(\w+)</dt>", html) and "<dt>cost</dt>" not in html
    assert "<dt>tokens</dt>" in html and "<dt>messages</dt>" in html  # what does not name a producer stays
    for index in range(6):
        assert f'id="rollout-{index}"' not in html and f"/rollouts/{index}/" not in html
    # Partials answer under the label only: an index is not read from a blind judge.
    a = lanes_for(user=bob, group=group).key(0)
    assert client.get(f"/projects/acme/runs/r1/groups/g1@1/rollouts/{a}/turns/").status_code == 200
    assert client.get("/projects/acme/runs/r1/groups/g1@1/rollouts/0/turns/").status_code == 404
    assert client.get("/projects/acme/runs/r1/groups/g1@1/rollouts/Z/diff/").status_code == 404
    # alice does not judge it: indexes, sources and costs as stored.
    client.force_login(alice)
    html = client.get("/projects/acme/runs/r1/groups/g1@1/").content.decode()
    assert 'id="rollout-0"' in html and "results_claude_10/" in html and "$3.988" in html


def test_the_group_api_gives_a_blind_judge_lanes_without_producer_fields(client, bob, alice, world):
    client.force_login(bob)
    body = client.get("/api/v1/groups/g1@1/?project=acme&run=r1").json()
    assert [r["lane"] for r in body["rollouts"]] == list("ABCDEF")
    for rollout in body["rollouts"]:
        assert "index" not in rollout and "source" not in rollout and "cost_usd" not in rollout["stats"]
        assert set(rollout["metadata"]) == {"mini_version", "verdict"}
        assert rollout["messages"] and rollout["stats"]["tokens"]
    client.force_login(alice)
    body = client.get("/api/v1/groups/g1@1/?project=acme&run=r1").json()
    assert [r["index"] for r in body["rollouts"]] == list(range(6))
    assert body["rollouts"][0]["metadata"]["model"] == "claude-sonnet-4-5-20250929"


def test_a_blind_judges_form_and_draft_use_labels_and_storage_keeps_indexes(client, bob, world):
    group = world["group"]
    lanes = lanes_for(user=bob, group=group)
    client.force_login(bob)
    c, first = lanes.key(4), lanes.key(0)  # rollout 4 passed (3 is the failing one)
    assert client.post("/projects/acme/runs/r1/groups/g1@1/draft/", {f"tier-{c}": "T2", "tier-0": "T1"}).status_code == 200
    assert Assignment.objects.get(reviewer=bob).draft == {"tier-4": "T2"}  # the index it sent is not read
    html = client.get("/projects/acme/runs/r1/groups/g1@1/").content.decode()
    assert f'value="T2" checked data-testid="tier-{c}-T2"' in html
    r = client.post("/projects/acme/runs/r1/groups/g1@1/judgment/", {f"tier-{c}": "T2", "seen_version": "0"})
    passing = sorted(lanes.key(i) for i in range(6) if group.rollouts.get(index=i).passed and i != 4)
    text = r.content.decode()
    assert r.status_code == 422 and f"rollout {passing[0]} passed and needs a tier" in text and "rollout #" not in text
    tiers = {i: "T2" for i in range(6) if group.rollouts.get(index=i).passed}
    r = client.post(
        "/projects/acme/runs/r1/groups/g1@1/judgment/",
        as_lanes({**{f"tier-{i}": t for i, t in tiers.items()}, "seen_version": "0"}, bob, group),
    )
    assert r.status_code == 302
    judgment = bob.judgments.get()
    assert sorted(judgment.items.values_list("rollout__index", flat=True)) == sorted(tiers)
    # Submitted: bob sees indexes and producers again, and his labels still open a partial.
    html = client.get("/projects/acme/runs/r1/groups/g1@1/").content.decode()
    assert 'id="rollout-0"' in html and "results_claude_10/" in html
    assert client.get(f"/projects/acme/runs/r1/groups/g1@1/rollouts/{first}/log/").status_code == 200


def test_a_blind_judges_search_names_lanes_and_never_matches_a_blind_field(client, bob, world):
    client.force_login(bob)
    lanes = lanes_for(user=bob, group=world["group"])
    body = client.get("/api/v1/search/", {"project": "acme", "q": "django", "mode": "words"}).json()
    assert body["results"] and all("index" not in r and r["lane"].isalpha() for r in body["results"])
    assert {r["lane"] for r in body["results"]} <= set(lanes.labels.values())
    for hit in (h for r in body["results"] for h in r["hits"]):
        assert (
            re.search(r"[?&]lane=[A-F](&|$)", hit["url"]) and "#turn-" + hit["url"].split("lane=")[1][0] in hit["url"]
        ) or hit["where"] != "turn"
    for value in ("results_claude_10", "claude-sonnet-4-5-20250929", "ckpt-gpt5-step-450"):
        assert client.get("/api/v1/search/", {"project": "acme", "q": value}).json()["count"] == 0, value
    hits = client.get(f"/projects/acme/runs/r1/groups/g1@1/rollouts/{lanes.key(0)}/hits/", {"q": "django"}).json()
    assert hits["total"] and all(f"lane={lanes.key(0)}" in h["url"] for h in hits["hits"])
