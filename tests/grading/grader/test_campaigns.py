"""Campaigns (grading.jobs.campaigns): a built-in grader on a step, a run or the judged
groups, counted as each group finishes; the same version again does nothing; a failing
group is counted and the rest go on; cancel; the LLM grader's tokens, latency and cost
against the local scripted server; and a campaign of a grader the run's policy does not use
leaves the stored advantages as they were."""

from __future__ import annotations

import pytest
from django.test import override_settings

import grading.grader.heuristic
import grading.jobs.grade
from grading.jobs import campaigns
from grading.jobs.campaigns import CampaignError, Scope, cancel_campaign, grade_chunk, parse_scope, start_campaign
from grading.jobs.tasks import grade_campaign_chunk_task
from grading.method.services.computation import step_inputs
from grading.models import AdvantageResult, Campaign, CampaignGroup, Group, Run, Verdict
from reviews.selectors.campaigns import judged_group_ids
from tests.factories import make_judgment
from tests.helpers.fake_openai import FakeOpenAI, scripted_model
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

# Transactional: a campaign's chunks are queued after its commit (transaction.on_commit).
pytestmark = pytest.mark.django_db(transaction=True)

MIXED_STEP_1 = ("a@1", "b@1", "c@1")


@pytest.fixture
def run(acme):
    """Run r1: three mixed groups and one all-pass group in step 1, two mixed groups in step 2."""
    ingest_groups(
        acme,
        small_group("a@1", rewards=(1, 0, 1)),
        small_group("b@1", instance_id="t-2", rewards=(1, 0)),
        small_group("c@1", instance_id="t-3", rewards=(0, 1, 1)),
        small_group("all-pass@1", instance_id="t-4", rewards=(1, 1)),
        small_group("d@2", instance_id="t-5", step=2, rewards=(1, 0)),
        small_group("e@2", instance_id="t-6", step=2, rewards=(0, 1)),
    )
    return Run.objects.get(project=acme, name="r1")


def uids(grader: str) -> set[str]:
    return set(Verdict.objects.filter(grader=grader).values_list("group__uid", flat=True))


def test_a_run_campaign_grades_every_mixed_group_and_running_it_again_does_nothing(acme, alice, run):
    campaign = start_campaign(project=acme, grader="heuristic", scope=Scope(Campaign.Scope.RUN, run), user=alice)
    assert campaign.status == Campaign.Status.DONE  # eager Celery: the chunks ran after the commit
    assert (campaign.grader, campaign.backend, campaign.created_by) == ("heuristic@1", "heuristic", alice)
    assert (campaign.total, campaign.graded, campaign.skipped_existing, campaign.failed) == (5, 5, 0, 0)
    assert uids("heuristic@1") == {*MIXED_STEP_1, "d@2", "e@2"}
    assert set(CampaignGroup.objects.values_list("outcome", flat=True)) == {CampaignGroup.Outcome.GRADED}
    assert campaign.latency_max_s is not None and campaign.latency_p50_s is not None
    assert campaign.latency_p50_s <= campaign.latency_max_s <= campaign.latency_sum_s
    assert (campaign.prompt_tokens, campaign.completion_tokens, campaign.cost_usd) == (0, 0, None)  # no model, no price
    assert campaign.started_at <= campaign.finished_at

    verdicts = Verdict.objects.count()
    again = start_campaign(project=acme, grader="heuristic@1", scope=Scope(Campaign.Scope.RUN, run), user=alice)
    assert (again.status, again.total, again.skipped_existing, again.graded, again.failed) == (Campaign.Status.DONE, 5, 5, 0, 0)
    assert Verdict.objects.count() == verdicts  # no new verdict
    assert not CampaignGroup.objects.filter(campaign=again).exists()  # and nothing was queued


def test_a_step_campaign_grades_that_step_only_and_skips_what_the_version_graded(acme, run, monkeypatch):
    grading.jobs.grade.grade_group(group_id=Group.objects.get(uid="a@1").pk, backend="heuristic")
    sent = []
    monkeypatch.setattr(campaigns, "CHUNK", 1)
    real = grade_campaign_chunk_task.delay
    monkeypatch.setattr(grade_campaign_chunk_task, "delay", lambda **kw: (sent.append(kw["group_ids"]), real(**kw))[1])
    campaign = start_campaign(project=acme, grader="heuristic", scope=parse_scope(acme, {"run": "r1", "step": 1}))
    assert (campaign.total, campaign.skipped_existing, campaign.graded, campaign.status) == (3, 1, 2, Campaign.Status.DONE)
    assert uids("heuristic@1") == set(MIXED_STEP_1)
    assert len(sent) == 2 and all(len(chunk) == 1 for chunk in sent)  # chunks of at most CHUNK groups


def test_a_judged_campaign_grades_only_the_groups_people_judged(acme, run, bob):
    for uid in ("b@1", "e@2"):
        make_judgment(Group.objects.get(uid=uid), bob, tiers={1: "T1"} if uid == "b@1" else {1: "T2"})
    scope = parse_scope(acme, {"judged": True})
    campaign = start_campaign(project=acme, grader="heuristic", scope=scope, judged=judged_group_ids(acme))
    assert (campaign.scope, campaign.run, campaign.total, campaign.graded) == ("judged", None, 2, 2)
    assert uids("heuristic@1") == {"b@1", "e@2"}
    in_step_1 = start_campaign(
        project=acme,
        grader="heuristic",
        scope=parse_scope(acme, {"judged": True, "run": "r1"}),
        judged=judged_group_ids(acme, run),
    )
    assert (in_step_1.total, in_step_1.skipped_existing) == (2, 2)


def test_a_failing_group_counts_as_failed_and_the_rest_are_graded(acme, run, monkeypatch):
    broken = Group.objects.get(uid="b@1").pk
    real = campaigns.grade_group

    def grade(*, group_id, **kw):
        if group_id == broken:
            raise OSError("the workspace could not be read")
        return real(group_id=group_id, **kw)

    monkeypatch.setattr(campaigns, "grade_group", grade)
    campaign = start_campaign(project=acme, grader="heuristic", scope=Scope(Campaign.Scope.STEP, run, 1))
    assert (campaign.status, campaign.total, campaign.graded, campaign.failed) == (Campaign.Status.DONE, 3, 2, 1)
    assert uids("heuristic@1") == {"a@1", "c@1"}
    row = CampaignGroup.objects.get(campaign=campaign, group_id=broken)
    assert row.outcome == CampaignGroup.Outcome.FAILED and "could not be read" in row.error


def test_an_invalid_verdict_counts_as_failed(acme, run, monkeypatch):
    from grading.grader.base import GraderResult

    monkeypatch.setattr(
        grading.grader.heuristic.HeuristicGrader,
        "grade",
        lambda self, ws: GraderResult(status="invalid", errors=["nothing to cite"]),
    )
    campaign = start_campaign(project=acme, grader="heuristic", scope=Scope(Campaign.Scope.STEP, run, 2))
    assert (campaign.status, campaign.graded, campaign.failed) == (Campaign.Status.DONE, 0, 2)
    assert set(Verdict.objects.filter(grader="heuristic@1").values_list("status", flat=True)) == {"invalid"}


def test_cancel_stops_the_campaign_before_its_next_group(acme, run, monkeypatch):
    held = []
    monkeypatch.setattr(grade_campaign_chunk_task, "delay", lambda **kw: held.append(kw))
    campaign = start_campaign(project=acme, grader="heuristic", scope=Scope(Campaign.Scope.RUN, run))
    assert campaign.status == Campaign.Status.QUEUED and held
    assert cancel_campaign(campaign) and campaign.status == Campaign.Status.CANCELLED and campaign.finished_at
    for chunk in held:  # the worker picks the chunks up after the cancel
        assert grade_chunk(**chunk) == 0
    campaign.refresh_from_db()
    assert (campaign.status, campaign.graded, campaign.failed) == (Campaign.Status.CANCELLED, 0, 0)
    assert not Verdict.objects.exists()
    assert not cancel_campaign(campaign)  # it has ended


def test_a_redelivered_chunk_counts_each_group_once(acme, run, monkeypatch):
    held = []
    monkeypatch.setattr(grade_campaign_chunk_task, "delay", lambda **kw: held.append(kw))
    campaign = start_campaign(project=acme, grader="heuristic", scope=Scope(Campaign.Scope.STEP, run, 1))
    assert grade_chunk(**held[0]) == 3
    assert grade_chunk(**held[0]) == 0  # delivered again: nothing counted twice, no new verdict
    campaign.refresh_from_db()
    assert (campaign.status, campaign.graded, Verdict.objects.count()) == (Campaign.Status.DONE, 3, 3)


@pytest.mark.parametrize(
    ("scope", "field", "status"),
    [
        (None, "scope", 400),
        ({}, "scope.run", 400),
        ({"run": "r1", "color": "red"}, "scope.color", 400),
        ({"run": "nope"}, "scope.run", 404),
        ({"run": 7}, "scope.run", 400),
        ({"run": "r1", "step": "1"}, "scope.step", 400),
        ({"run": "r1", "step": True}, "scope.step", 400),
        ({"run": "r1", "step": 9}, "scope.step", 404),
        ({"step": 1}, "scope.run", 400),
        ({"judged": "yes"}, "scope.judged", 400),
        ({"judged": True, "run": "r1", "step": 1}, "scope.step", 400),
    ],
)
def test_a_bad_scope_names_its_field(acme, run, scope, field, status):
    with pytest.raises(CampaignError) as caught:
        parse_scope(acme, scope)
    assert (caught.value.field, caught.value.status) == (field, status)


@pytest.mark.parametrize("grader", ["", "gpt@1", "heuristic@2", "llm", 3])
def test_a_grader_that_is_not_a_built_in_current_version_is_refused(acme, run, grader):
    with override_settings(GRADER_BASE_URL="", GRADER_MODEL=""):
        with pytest.raises(CampaignError) as caught:
            start_campaign(project=acme, grader=grader, scope=Scope(Campaign.Scope.RUN, run))
    assert caught.value.field == "grader"
    assert not Campaign.objects.exists()


@pytest.mark.parametrize("price", [None, (2.5, 10.0)])
def test_an_llm_campaign_records_tokens_latency_and_a_cost_only_when_priced(acme, run, price):
    prices = {"GRADER_PRICE_PER_MTOK_IN": price[0], "GRADER_PRICE_PER_MTOK_OUT": price[1]} if price else {}
    with (
        FakeOpenAI(responder=scripted_model(1)) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True, **prices),
    ):
        campaign = start_campaign(project=acme, grader="llm", scope=Scope(Campaign.Scope.STEP, run, 2))
    assert (campaign.grader, campaign.status, campaign.graded) == ("llm:fake-model@1", Campaign.Status.DONE, 2)
    # two model calls per group (get_task, then the verdict), 100 prompt and 20 completion tokens each
    assert len(fake.requests) == 4
    assert (campaign.prompt_tokens, campaign.completion_tokens) == (400, 80)
    usages = [v.raw["usage"] for v in Verdict.objects.filter(grader="llm:fake-model@1")]
    assert campaign.latency_sum_s == pytest.approx(sum(u["latency_s"] for u in usages), abs=1e-6)
    assert campaign.latency_max_s == max(u["latency_s"] for u in usages) > 0
    if price is None:
        assert campaign.cost_usd is None and all("cost_usd" not in u for u in usages)
    else:
        per_group = (200 * 2.5 + 40 * 10.0) / 1_000_000
        assert all(u["cost_usd"] == pytest.approx(per_group) for u in usages)
        assert campaign.cost_usd == pytest.approx(2 * per_group)


def test_an_llm_campaign_fails_when_its_grader_cannot_run_any_more(acme, run, monkeypatch):
    held = []
    monkeypatch.setattr(grade_campaign_chunk_task, "delay", lambda **kw: held.append(kw))
    with (
        FakeOpenAI(responder=scripted_model(1)) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True),
    ):
        campaign = start_campaign(project=acme, grader="llm", scope=Scope(Campaign.Scope.STEP, run, 2))
    with override_settings(GRADER_BASE_URL="", GRADER_MODEL=""):  # the worker has no model server
        grade_chunk(**held[0])
    campaign.refresh_from_db()
    assert campaign.status == Campaign.Status.FAILED and "GRADER_BASE_URL" in campaign.error
    assert not Verdict.objects.exists()


def advantages(run) -> list[tuple]:
    return sorted(AdvantageResult.objects.filter(step__run=run).values_list("rollout_id", "status", "advantage", "verdict_id"))


@pytest.mark.parametrize("auto_grade", [Run.AutoGrade.HEURISTIC, Run.AutoGrade.NONE])
def test_a_campaign_of_a_grader_the_policy_does_not_use_leaves_the_advantages_alone(acme, run, auto_grade):
    run.auto_grade = auto_grade
    run.save(update_fields=["auto_grade"])
    step = run.steps.get(number=1)
    grading.jobs.grade.queue_step(step=step, backend="heuristic")  # the run's own grading (eager)
    before = advantages(run)
    assert before and {status for _, status, _, _ in before if status} >= {"graded"}
    inputs_before = step_inputs(step).frame[["rollout_id", "verdict_id", "tier"]]
    with (
        FakeOpenAI(responder=scripted_model(1)) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True),
    ):
        campaign = start_campaign(project=acme, grader="llm", scope=Scope(Campaign.Scope.RUN, run))
    assert (campaign.status, campaign.graded) == (Campaign.Status.DONE, 5)
    llm = Verdict.objects.filter(grader="llm:fake-model@1")
    assert llm.count() == 5 and all(v.bench_only for v in llm)  # newer than the heuristic's
    assert advantages(run) == before
    assert step_inputs(step).frame[["rollout_id", "verdict_id", "tier"]].equals(inputs_before)


def test_a_campaign_of_the_policys_own_grader_gives_the_run_its_verdicts(acme, run):
    run.auto_grade = Run.AutoGrade.HEURISTIC
    run.save(update_fields=["auto_grade"])  # after ingest: the groups have no verdict yet
    assert not AdvantageResult.objects.filter(step__run=run, status="graded").exists()
    campaign = start_campaign(project=acme, grader="heuristic", scope=Scope(Campaign.Scope.STEP, run, 1))
    assert campaign.graded == 3
    assert not Verdict.objects.filter(bench_only=True).exists()
    graded = set(AdvantageResult.objects.filter(step__run=run, status="graded").values_list("uid", flat=True))
    assert graded == set(MIXED_STEP_1)
