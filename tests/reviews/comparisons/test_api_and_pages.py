"""Building and reading a comparison as its users do: an admin's form and POST, a reviewer's
refusals, JSON errors naming the field, the dataset a trainer downloads, the list page."""

from __future__ import annotations

import orjson
import pytest

from grading.models import Comparison, ComparisonEntry, Group, Run
from tests.factories import make_judgment
from tests.helpers.comparisons import two_runs

pytestmark = pytest.mark.django_db
BODY = {"name": "final", "a": {"run": "baseline"}, "b": {"run": "gagar"}, "per_side": 2}


@pytest.fixture
def runs(acme):
    two_runs(acme)
    return acme


def test_an_admin_builds_one_over_the_api_and_reads_it(client, alice_token, runs):
    auth = {"HTTP_AUTHORIZATION": f"Token {alice_token}"}
    r = client.post("/api/v1/comparisons/?project=acme", BODY, content_type="application/json", **auth)
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["sides"]["a"] == {"label": "baseline@2", "steps": [2, 2]} and body["run"] == "final"
    assert r["Location"] == body["url"]
    detail = client.get(body["url"], **auth).json()
    assert detail["counts"]["groups"] == 0 and detail["figures"]["win_rate"]["a"]["estimate"] is None
    listed = client.get("/api/v1/comparisons/?project=acme", **auth).json()
    assert [c["name"] for c in listed] == ["final"]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({**BODY, "a": {"run": "nope"}}, 404, "a.run"),
        ({**BODY, "name": "gagar"}, 409, "name"),
        ({**BODY, "per_side": 99}, 400, "per_side"),
    ],
)
def test_a_refused_body_is_a_json_error_naming_the_field(client, alice_token, runs, body, status, field):
    r = client.post(
        "/api/v1/comparisons/?project=acme", body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {alice_token}"
    )
    assert r.status_code == status and r.json()["field"] == field
    assert not Comparison.objects.exists() and not Run.objects.filter(name="final").exists()


def test_a_reviewer_may_read_but_not_build_and_a_trainer_downloads_the_dataset(client, bob, alice, trainer_token, runs):
    client.force_login(bob)
    r = client.post("/api/v1/comparisons/?project=acme", BODY, content_type="application/json")
    assert r.status_code == 403
    assert client.post("/projects/acme/comparisons/", {"name": "final"}).status_code == 403
    html = client.get("/projects/acme/comparisons/").content.decode()
    assert 'data-testid="comparison-form"' not in html and 'data-testid="no-comparisons"' in html
    client.force_login(alice)
    client.post(
        "/projects/acme/comparisons/",
        {"name": "final", "a_run": "baseline", "b_run": "gagar", "per_side": "2", "max_tasks": "100", "seed": "0"},
    )
    comparison = Comparison.objects.get()
    group = Group.objects.filter(run=comparison.run).order_by("uid").first()
    make_judgment(group, alice, tiers={r.index: ("T1", 1) if r.index == 0 else ("T2", 2) for r in group.rollouts.all()})
    r = client.get("/api/v1/comparisons/final/dataset/", {"project": "acme"}, HTTP_AUTHORIZATION=f"Token {trainer_token}")
    assert r.status_code == 200 and r["Content-Type"] == "application/x-ndjson"
    assert 'filename="final.jsonl"' in r["Content-Disposition"]
    lines = [orjson.loads(line) for line in b"".join(r.streaming_content).splitlines()]
    assert [line["group"] for line in lines] == sorted(comparison.run.groups.values_list("uid", flat=True))
    first = lines[0]
    sides = dict(ComparisonEntry.objects.filter(rollout__group=group).values_list("rollout__index", "side"))
    assert {c["index"]: c["side"] for c in first["candidates"]} == sides
    assert all(c["source"].startswith(("baseline@2/", "gagar@2/")) for c in first["candidates"])
    judged = {c["index"]: c["judgments"] for c in first["candidates"]}
    assert judged[0] == [{"judge": "person:alice", "blind": False, "tier": "T1", "rank": 1, "scores": {}, "cheat": False}]
    assert all(j == [{**judged[0][0], "tier": "T2", "rank": 2}] for i, j in judged.items() if i)
    assert client.get("/api/v1/comparisons/final/dataset/", {"project": "acme"}, HTTP_AUTHORIZATION="Token nope").status_code in (
        401,
        403,
    )


def test_the_form_keeps_what_was_typed_and_says_what_was_wrong(client, alice, runs):
    client.force_login(alice)
    r = client.post("/projects/acme/comparisons/", {"name": "final", "a_run": "baseline", "a_first": "9", "b_run": "gagar"})
    html = r.content.decode()
    assert r.status_code == 400 and "a.steps: run &#x27;baseline&#x27; holds no step from 9 to 9" in html
    assert 'value="final"' in html and not Comparison.objects.exists()
    r = client.post("/projects/acme/comparisons/", {"name": "final", "a_run": "baseline", "b_run": "gagar", "a_first": "1"})
    assert r.status_code == 302 and r["Location"] == "/projects/acme/comparisons/final/"
    assert Comparison.objects.get().label_a == "baseline@1"


def test_the_list_costs_a_fixed_number_of_queries(client, alice, runs, django_assert_num_queries):
    client.force_login(alice)
    for name in ("one", "two", "three"):
        client.post("/projects/acme/comparisons/", {"name": name, "a_run": "baseline", "b_run": "gagar"})
    with django_assert_num_queries(7):  # three comparisons or thirty
        html = client.get("/projects/acme/comparisons/").content.decode()
    assert html.count("data-comparison=") == 3


def test_runs_side_by_side_link_to_a_blind_comparison_of_them(client, alice, runs):
    client.force_login(alice)
    html = client.get("/projects/acme/runs/baseline/timeline/", {"compare": "gagar", "at": "2"}).content.decode()
    link = "/projects/acme/comparisons/?a_run=baseline&amp;b_run=gagar"
    assert f'href="{link}"' in html
    form = client.get(link.replace("&amp;", "&")).content.decode()
    assert '<option value="baseline" selected>' in form.split('name="a_run"')[1].split("</select>")[0]
    assert '<option value="gagar" selected>' in form.split('name="b_run"')[1].split("</select>")[0]


def test_the_comparisons_run_page_says_whose_groups_it_holds(client, alice, runs):
    client.force_login(alice)
    client.post("/projects/acme/comparisons/", {"name": "final", "a_run": "baseline", "b_run": "gagar"})
    html = client.get("/projects/acme/runs/final/").content.decode()
    assert 'data-testid="comparison-run"' in html and 'href="/projects/acme/comparisons/final/"' in html
    assert 'data-testid="comparison-run"' not in client.get("/projects/acme/runs/baseline/").content.decode()
