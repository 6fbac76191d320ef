"""A project admin cannot run up the operator's model bill without bound.

Before, any project admin could start LLM campaigns on every group of every run, as often as
they liked: nothing capped what one project spent. Now the operator's caps per project and
rolling 24 hours (GAGAR_CAMPAIGN_TOKENS_PER_DAY, GAGAR_CAMPAIGN_USD_PER_DAY) refuse a new LLM
campaign (429) and stop a running one before its next group; the heuristic grader costs
nothing and is never refused, and another project's spend is its own.

People: alice is admin of acme (her token too); carol is admin of "other".
"""

from __future__ import annotations

import orjson
import pytest
from django.test import override_settings

from grading.models import Campaign, CampaignGroup, Verdict
from tests.helpers.campaigns import campaign_groups
from tests.helpers.fake_openai import FakeOpenAI, scripted_model

pytestmark = pytest.mark.django_db(transaction=True)


def start(client, token, grader="llm", project="acme"):
    return client.post(
        f"/api/v1/campaigns/?project={project}",
        data=orjson.dumps({"grader": grader, "scope": {"run": "r1"}}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def spent(project, tokens: int, usd: float | None = None, grader: str = "llm:m@1") -> Campaign:
    return Campaign.objects.create(
        project=project, grader=grader, backend="llm", scope="run", status="done", prompt_tokens=tokens, cost_usd=usd
    )


@pytest.fixture
def model():
    with FakeOpenAI(responder=scripted_model(1)) as fake:
        with override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="m", GRADER_ALLOW_PRIVATE_NETWORK=True):
            yield fake


@override_settings(GAGAR_CAMPAIGN_TOKENS_PER_DAY=10_000, GAGAR_CAMPAIGN_USD_PER_DAY=0)
def test_an_llm_campaign_past_the_projects_daily_tokens_is_refused(client, alice_token, acme, other_project, model):
    campaign_groups(acme)
    spent(acme, 10_000)
    r = start(client, alice_token)
    assert r.status_code == 429 and r.json()["field"] == "grader", r.content
    assert "GAGAR_CAMPAIGN_TOKENS_PER_DAY" in r.json()["detail"] and "10,000" in r.json()["detail"]
    assert Campaign.objects.count() == 1 and not model.requests
    assert start(client, alice_token, grader="heuristic").status_code == 202  # costs nothing


@override_settings(GAGAR_CAMPAIGN_TOKENS_PER_DAY=0, GAGAR_CAMPAIGN_USD_PER_DAY=5.0)
def test_an_llm_campaign_past_the_projects_daily_dollars_is_refused(client, alice_token, acme, model):
    campaign_groups(acme)
    spent(acme, 1, usd=5.0)
    r = start(client, alice_token)
    assert r.status_code == 429 and "GAGAR_CAMPAIGN_USD_PER_DAY" in r.json()["detail"], r.content


@override_settings(GAGAR_CAMPAIGN_TOKENS_PER_DAY=10_000, GAGAR_CAMPAIGN_USD_PER_DAY=0)
def test_spend_a_day_old_and_another_projects_spend_do_not_count(client, alice_token, acme, other_project, model):
    from datetime import timedelta

    from django.utils import timezone

    campaign_groups(acme)
    old = spent(acme, 50_000)
    Campaign.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=1, minutes=1))
    spent(other_project, 50_000)
    r = start(client, alice_token)
    assert r.status_code == 202 and r.json()["status"] == "done", r.content


def test_a_running_campaign_stops_before_the_group_that_would_pass_the_cap(client, alice, alice_token, acme, model):
    """The scripted model's first group costs a few thousand tokens: with a cap just above
    nothing, the campaign grades one group and stops before the next, saying why."""
    campaign_groups(acme)
    with override_settings(GAGAR_CAMPAIGN_TOKENS_PER_DAY=1, GAGAR_CAMPAIGN_USD_PER_DAY=0):
        r = start(client, alice_token)
    assert r.status_code == 202, r.content
    campaign = Campaign.objects.get()
    assert campaign.status == "failed" and "GAGAR_CAMPAIGN_TOKENS_PER_DAY" in campaign.error, campaign.error
    assert (campaign.graded, campaign.failed, campaign.total) == (1, 0, 3)
    assert CampaignGroup.objects.filter(campaign=campaign, outcome="pending").count() == 2
    assert Verdict.objects.filter(grader=campaign.grader).count() == 1
    client.force_login(alice)
    page = client.get("/projects/acme/calibration/campaigns/").content.decode()
    assert "stopped before its next group: the project&#x27;s LLM campaigns used" in page
