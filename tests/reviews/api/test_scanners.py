"""The scanners' validation set over the API: POST/GET /api/v1/scan-labels/, GET /api/v1/scanners/.

People: alice admin of acme (and her token); erin an auditor; bob a reviewer; carol an admin of
another project only. World: tests/helpers/scan_world.py for the figures; the upload tests
label the small group s@1 (run r1, rollouts 0-2) and the real group (run
gemini-3-pro-swebench-long).
"""

from __future__ import annotations

import json

import pytest

from grading.grader.prescreen.catalogue import BY_SLUG, CATEGORIES
from grading.models import Role, ScanLabel
from tests.helpers.people import member
from tests.helpers.scan_world import OLDER_GOLD, REAL, REAL_RUN, SMALL, scan_world

pytestmark = pytest.mark.django_db
LABELS = "/api/v1/scan-labels/?project=acme"
NDJSON = "application/x-ndjson"


@pytest.fixture
def erin(acme):
    return member("erin", acme, Role.AUDITOR)


@pytest.fixture
def world(acme):
    r = scan_world(acme)
    ScanLabel.objects.all().delete()
    return r


def label(rollout: int = 0, *, group: str = SMALL, run: str = "r1", category: str = "history_search", **more) -> dict:
    return {"group": group, "run": run, "rollout": rollout, "category": category, "label": "cheat", **more}


def jsonl(*items) -> str:
    return "".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in items)


def post(client, body: str, content_type: str = NDJSON, **headers):
    return client.post(LABELS, data=body, content_type=content_type, **headers)


def test_an_auditor_uploads_json_lines_and_reads_them_back(client, world, erin):
    client.force_login(erin)
    body = jsonl(
        label(0, note="runs git log --all"),
        label(2, label="honest"),
        label(1, group=REAL, run=REAL_RUN, category="project_fetch"),
    )
    r = post(client, body)
    assert (r.status_code, r.json()) == (200, {"stored": 3})
    stored = {
        (s.rollout.group.uid, s.rollout.index, s.category): (s.label, s.source, s.author, s.note) for s in ScanLabel.objects.all()
    }
    assert stored == {
        (SMALL, 0, "history_search"): ("cheat", "upload", "erin", "runs git log --all"),
        (SMALL, 2, "history_search"): ("honest", "upload", "erin", ""),
        (REAL, 1, "project_fetch"): ("cheat", "upload", "erin", ""),
    }
    listed = client.get(LABELS).json()
    assert [(x["group"], x["rollout"], x["category"], x["label"]) for x in listed] == [
        (REAL, 1, "project_fetch", "cheat"),
        (SMALL, 2, "history_search", "honest"),
        (SMALL, 0, "history_search", "cheat"),
    ]
    assert listed[2]["note"] == "runs git log --all" and listed[0]["run"] == REAL_RUN


def test_a_json_list_by_an_admins_token_and_a_newer_label_replaces_the_older(client, world, alice_token):
    auth = {"HTTP_AUTHORIZATION": f"Token {alice_token}"}
    assert post(client, json.dumps([label(0)]), "application/json", **auth).json() == {"stored": 1}
    r = post(client, json.dumps([label(0, label="honest", note="the log was the issue's")]), "application/json", **auth)
    assert r.status_code == 200
    only = ScanLabel.objects.get()
    assert (only.label, only.note, only.author) == ("honest", "the log was the issue's", "alice")


def test_a_bad_line_refuses_the_whole_body_naming_each_line_and_field(client, world, erin):
    client.force_login(erin)
    body = jsonl(
        label(0),
        label(1, label="maybe"),
        "{not json",
        label(2, category="rm_rf"),
        label(7),
        label(0, group="nope@1"),
        label(0, run="nope"),
        label(0),
    )
    r = post(client, body)
    assert r.status_code == 400
    got = r.json()
    assert (got["line"], got["field"], got["refused"]) == (2, "label", 4)
    assert [(e["line"], e["field"]) for e in got["errors"]] == [(2, "label"), (3, ""), (4, "category"), (8, "category")]
    assert "rm_rf" in got["errors"][2]["message"] and "line 1" in got["errors"][3]["message"]
    assert got["detail"].startswith("nothing stored: 4 refusals; the first: line 2, label:")
    assert not ScanLabel.objects.exists()  # not even line 1
    # once the body parses, the rollouts are looked up: each one missing is named
    r = post(client, jsonl(label(0), label(7), label(0, group="nope@1"), label(0, run="nope")))
    assert r.status_code == 400
    assert [(e["line"], e["field"]) for e in r.json()["errors"]] == [(2, "rollout"), (3, "group"), (4, "run")]
    assert not ScanLabel.objects.exists()


def test_an_unknown_category_is_a_400_naming_the_field(client, world, erin):
    client.force_login(erin)
    r = post(client, json.dumps([label(0, category="upstream_history")]), "application/json")
    assert r.status_code == 400 and r.json()["field"] == "category" and r.json()["line"] == 1
    assert "no scanner category 'upstream_history'" in r.json()["detail"]


@pytest.mark.parametrize(
    "body, content_type, field",
    [
        ("", NDJSON, ""),
        ("[]", "application/json", ""),
        ('{"a": 1}', "application/json", "a"),  # one line: an object with an unknown field
        ("[" * 100000 + "]" * 100000, "application/json", ""),
        (json.dumps([label(-1)]), "application/json", "rollout"),
        (json.dumps([label(True)]), "application/json", "rollout"),
        (json.dumps([label(0, note="x" * 3000)]), "application/json", "note"),
        (json.dumps([label(0, note="a\u0000b")]), "application/json", "note"),
        (json.dumps([label(0, labell="cheat")]), "application/json", "labell"),
        ('[{"group": "s@1", "group": "s@1"}]', "application/json", ""),
        (json.dumps([label(0, group=None)]), "application/json", "group"),
        (json.dumps([label(0, run=3)]), "application/json", "run"),
        (jsonl(label(0)) * 60000, NDJSON, ""),  # over 4 MiB: refused before it is parsed
    ],
)
def test_malformed_bodies_are_json_400s_never_500s(client, world, erin, body, content_type, field):
    client.force_login(erin)
    r = post(client, body, content_type)
    assert r.status_code == 400 and r["Content-Type"] == "application/json"
    assert r.json()["field"] == field and not ScanLabel.objects.exists()


def test_an_unknown_content_type_is_a_json_415(client, world, erin):
    client.force_login(erin)
    r = client.post(LABELS, data=jsonl(label(0)), content_type="text/csv")
    assert r.status_code == 415 and "detail" in r.json()


def test_who_may_upload_and_read(client, acme, world, bob, carol, erin):
    body = jsonl(label(0))
    assert post(client, body).status_code == 401  # anonymous
    assert client.get(LABELS).status_code == 401
    assert client.get("/api/v1/scanners/?project=acme").status_code == 401
    client.force_login(bob)  # a reviewer of acme: no audit
    assert post(client, body).status_code == 403
    assert client.get(LABELS).status_code == 403 and client.get("/api/v1/scanners/?project=acme").status_code == 403
    client.force_login(carol)  # not in acme
    assert post(client, body).status_code == 404
    trainer = member("tina", acme, Role.TRAINER)
    client.force_login(trainer)
    assert post(client, body).status_code == 403
    assert not ScanLabel.objects.exists()
    client.force_login(erin)
    assert post(client, body).status_code == 200


def test_the_label_list_pages_by_id(client, world, erin):
    client.force_login(erin)
    rollouts = [(SMALL, "r1", i) for i in range(3)] + [(REAL, REAL_RUN, i) for i in range(4)]
    categories = [c.slug for c in CATEGORIES]
    body = [label(i, group=g, run=run, category=c) for g, run, i in rollouts for c in categories]  # 140 labels
    assert post(client, json.dumps(body), "application/json").json() == {"stored": 140}
    first = client.get(LABELS)
    assert len(first.json()) == 100 and 'rel="next"' in first["Link"]
    following = first["Link"].split("<", 1)[1].split(">", 1)[0]
    second = client.get(following)
    assert len(second.json()) == 40 and "Link" not in second
    assert {x["id"] for x in first.json()}.isdisjoint(x["id"] for x in second.json())
    assert client.get(LABELS + "&before=abc").status_code == 400


def test_the_scanners_endpoint_gives_each_version_its_figures(client, acme, erin):
    scan_world(acme)
    client.force_login(erin)
    got = client.get("/api/v1/scanners/?project=acme").json()
    assert (got["labeled_rollouts"], got["rescreened"], got["capped"]) == (7, 7, False)
    by = {s["category"]: s for s in got["scanners"]}
    assert list(by) == [c.slug for c in CATEGORIES]
    fetch = by["project_fetch"]
    assert (fetch["version"], fetch["labeled"], fetch["labeled_cheat"]) == (BY_SLUG["project_fetch"].version, 5, 2)
    current = fetch["versions"][0]
    assert {k: current[k] for k in ("current", "findings", "tp", "fp", "fn", "tn", "precision", "recall")} == {
        "current": True,
        "findings": 2,
        "tp": 1,
        "fp": 1,
        "fn": 1,
        "tn": 2,
        "precision": 0.5,
        "recall": 0.5,
    }
    assert current["precision_interval"] == [0.095, 0.905]
    older = by["gold_identity"]["versions"][1]
    assert (older["scanner"], older["tp"], older["fp"], older["fn"], older["recall"]) == (OLDER_GOLD, 1, 1, None, None)
