"""The campaigns API and page: an admin starts a campaign (202), lists and reads it, cancels
it; a refused body names its field; reviewers, trainers and strangers are refused; the page
lists progress, tokens, cost and latency, polls while one runs, and starts one from its form."""

from __future__ import annotations

import json

import pytest

from grading.jobs.tasks import grade_campaign_chunk_task
from grading.models import Campaign, Verdict
from tests.factories import make_judgment
from tests.helpers.campaigns import campaign_groups

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/v1/campaigns/"
PAGE = "/projects/acme/calibration/campaigns/"


@pytest.fixture
def groups(acme):
    return campaign_groups(acme)


def post(client, body, token=None, path=URL):
    headers = {"HTTP_AUTHORIZATION": f"Token {token}"} if token else {}
    return client.post(f"{path}?project=acme", json.dumps(body), content_type="application/json", **headers)


def test_an_admin_token_starts_lists_and_reads_a_campaign(client, alice_token, groups):
    r = post(client, {"grader": "heuristic", "scope": {"run": "r1"}}, alice_token)
    assert r.status_code == 202, r.content
    body = r.json()
    assert r["Location"] == body["url"] == f"{URL}{body['id']}/"
    assert body["grader"] == "heuristic@1" and body["backend"] == "heuristic"
    assert body["scope"] == {"kind": "run", "run": "r1", "step": None}
    assert body["status"] == "done"  # eager Celery
    assert body["counts"] == {"total": 3, "graded": 3, "skipped_existing": 0, "failed": 0, "pending": 0}
    assert body["progress"] == {"done": 3, "total": 3, "percent": 100}
    assert body["tokens"] == {"prompt": 0, "completion": 0} and body["cost_usd"] is None
    assert body["latency_s"]["p50"] is not None and body["latency_s"]["max"] >= body["latency_s"]["p50"]
    assert body["created_by"] == "alice"
    assert "tier" not in r.content.decode().lower()  # counts and costs, no verdict

    again = post(client, {"grader": "heuristic@1", "scope": {"run": "r1", "step": 1}}, alice_token).json()
    assert again["counts"] == {"total": 2, "graded": 0, "skipped_existing": 2, "failed": 0, "pending": 0}
    assert Verdict.objects.count() == 3

    auth = {"HTTP_AUTHORIZATION": f"Token {alice_token}"}
    listed = client.get(URL, {"project": "acme"}, **auth).json()
    assert [c["id"] for c in listed] == [again["id"], body["id"]]
    one = client.get(f"{URL}{body['id']}/", {"project": "acme"}, **auth)
    assert one.status_code == 200 and one.json() == body
    assert client.get(f"{URL}999999/", {"project": "acme"}, **auth).status_code == 404


def test_a_judged_scope_grades_the_judged_groups(client, alice, bob, groups):
    make_judgment(groups["b@1"], bob, tiers={0: "T1"})
    client.force_login(alice)  # a session works too
    r = post(client, {"grader": "heuristic", "scope": {"judged": True}})
    assert r.status_code == 202, r.content
    assert r.json()["counts"]["graded"] == 1 and r.json()["scope"] == {"kind": "judged", "run": None, "step": None}
    assert list(Verdict.objects.values_list("group__uid", flat=True)) == ["b@1"]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ([], 400, "body"),
        ({"scope": {"run": "r1"}}, 400, "grader"),
        ({"grader": "gpt@1", "scope": {"run": "r1"}}, 400, "grader"),
        ({"grader": "heuristic", "scope": {"run": "r1"}, "extra": 1}, 400, "extra"),
        ({"grader": "heuristic"}, 400, "scope"),
        ({"grader": "heuristic", "scope": {"run": "nope"}}, 404, "scope.run"),
        ({"grader": "heuristic", "scope": {"run": "r1", "step": -1}}, 400, "scope.step"),
        ({"grader": "heuristic", "scope": {"run": "r1", "step": 7}}, 404, "scope.step"),
    ],
)
def test_a_refused_body_names_its_field(client, alice_token, groups, body, status, field):
    r = post(client, body, alice_token)
    assert r.status_code == status, r.content
    assert r.json()["field"] == field and r.json()["detail"]
    assert not Campaign.objects.exists()


def test_cancel_stops_a_running_campaign_and_refuses_an_ended_one(client, alice_token, groups, monkeypatch):
    monkeypatch.setattr(grade_campaign_chunk_task, "delay", lambda **kw: None)  # no worker picks it up
    started = post(client, {"grader": "heuristic", "scope": {"run": "r1"}}, alice_token).json()
    assert started["status"] == "queued" and started["counts"]["pending"] == 3
    r = post(client, {}, alice_token, path=f"{URL}{started['id']}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled" and r.json()["finished_at"]
    again = post(client, {}, alice_token, path=f"{URL}{started['id']}/cancel/")
    assert again.status_code == 409 and "cancelled" in again.json()["detail"]


def test_only_admins_may_run_campaigns(client, alice_token, trainer_token, bob, carol, groups):
    started = post(client, {"grader": "heuristic", "scope": {"run": "r1"}}, alice_token).json()
    client.force_login(bob)  # a reviewer
    assert post(client, {"grader": "heuristic", "scope": {"run": "r1"}}).status_code == 403
    assert client.get(URL, {"project": "acme"}).status_code == 403
    assert client.get(f"{URL}{started['id']}/", {"project": "acme"}).status_code == 403
    assert post(client, {}, path=f"{URL}{started['id']}/cancel/").status_code == 403
    assert client.get(PAGE).status_code == 403
    assert client.post(PAGE, {"grader": "heuristic", "run": "r1"}).status_code == 403
    client.logout()
    trainer = {"HTTP_AUTHORIZATION": f"Token {trainer_token}"}
    assert client.get(URL, {"project": "acme"}, **trainer).status_code == 403
    assert post(client, {"grader": "heuristic", "scope": {"run": "r1"}}, trainer_token).status_code == 403
    client.force_login(carol)  # not a member
    assert client.get(URL, {"project": "acme"}).status_code == 404
    assert client.get(PAGE).status_code == 404
    assert Campaign.objects.count() == 1


def test_the_page_starts_a_campaign_and_lists_its_figures(client, alice, groups, django_assert_num_queries):
    client.force_login(alice)
    empty = client.get(PAGE).content.decode()
    assert 'data-testid="no-campaigns"' in empty and 'data-settled="true"' in empty
    r = client.post(PAGE, {"grader": "heuristic", "run": "r1", "step": "2"}, follow=True)
    page = r.content.decode()
    assert "Campaign #" in page and "1 mixed group, 0 graded before." in page
    campaign = Campaign.objects.get()
    assert (campaign.scope, campaign.step_number, campaign.status) == ("step", 2, "done")
    assert f'data-campaign="{campaign.pk}" data-status="done"' in page and "r1 step 2" in page
    assert 'hx-trigger="every 2s"' not in page and 'data-settled="true"' in page
    bad = client.post(PAGE, {"grader": "heuristic", "run": "r1", "step": "x"}, follow=True).content.decode()
    assert "Campaign not started: scope.step" in bad
    for _ in range(3):
        client.post(PAGE, {"grader": "heuristic", "run": "r1"})
    # session, user, project, membership, campaigns, runs: whatever the number of campaigns
    with django_assert_num_queries(6):
        listed = client.get(PAGE)
    assert listed.content.decode().count("data-campaign=") == 4


def test_the_page_polls_while_a_campaign_runs(client, alice, groups, monkeypatch):
    monkeypatch.setattr(grade_campaign_chunk_task, "delay", lambda **kw: None)
    client.force_login(alice)
    client.post(PAGE, {"grader": "heuristic", "run": "r1"})
    page = client.get(PAGE).content.decode()
    assert 'hx-trigger="every 2s"' in page and 'data-settled="false"' in page and ">Cancel<" in page
    part = client.get(PAGE, HTTP_HX_REQUEST="true").content.decode()
    assert part.lstrip().startswith('<section id="campaigns"') and "<html" not in part
    campaign = Campaign.objects.get()
    r = client.post(f"{PAGE}{campaign.pk}/cancel/", follow=True)
    assert f"Campaign #{campaign.pk} cancelled." in r.content.decode()
    campaign.refresh_from_db()
    assert campaign.status == "cancelled"
    assert 'data-settled="true"' in client.get(PAGE).content.decode()


def test_the_bench_links_admins_to_campaigns(client, alice, groups):
    client.force_login(alice)
    assert 'data-testid="campaigns-link"' in client.get("/projects/acme/calibration/bench/").content.decode()
