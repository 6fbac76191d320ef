"""Grading a step: jobs, one verdict per group per grader, pages, command, refusals."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings

from grading.jobs.grade import grade_group, queue_step
from grading.models import AdvantageResult, GradingJob, Group, Verdict
from grading.registry.backends import GraderUnavailable, check_grader_url
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

# Transactional: jobs are queued after the commit (transaction.on_commit), as in production.
pytestmark = pytest.mark.django_db(transaction=True)

URL = "/projects/acme/runs/r1/steps/1/grading/"


@pytest.fixture
def step(acme):
    groups = [
        small_group("mixed-a@1", rewards=(1, 1, 0)),
        small_group("mixed-b@1", instance_id="t-2", rewards=(1, 0, 0, 1)),
        small_group("all-pass@1", instance_id="t-3", rewards=(1, 1)),
    ]
    report = ingest_groups(acme, *groups)
    assert report.groups_created == 3
    return Group.objects.get(uid="mixed-a@1").step


def test_admin_grades_a_step_from_the_page(client, alice, step):
    client.force_login(alice)
    r = client.post(URL, {"backend": "heuristic"}, follow=True)
    assert r.status_code == 200
    assert "Queued 2 mixed groups for the heuristic grader." in r.content.decode()
    verdicts = Verdict.objects.filter(group__step=step)
    assert verdicts.count() == 2 and set(verdicts.values_list("status", flat=True)) == {"valid"}
    assert set(GradingJob.objects.values_list("status", flat=True)) == {"done"}
    page = client.get(URL).content.decode()
    assert "mixed-a@1" in page and "heuristic@1" in page and "all-pass@1" not in page
    # the verdicts fed the advantage engine (eager Celery recomputed the step)
    statuses = set(AdvantageResult.objects.filter(uid__startswith="mixed").values_list("status", flat=True))
    assert statuses == {"graded"}


def test_grading_twice_keeps_one_verdict_and_makes_no_second_call(step):
    group = Group.objects.get(uid="mixed-a@1")
    first = grade_group(group_id=group.pk, backend="heuristic")
    job = GradingJob.objects.get(group=group)
    second = grade_group(group_id=group.pk, backend="heuristic")
    assert first.pk == second.pk and Verdict.objects.filter(group=group).count() == 1
    job.refresh_from_db()
    assert job.attempts == 1  # the second delivery found the verdict and did not grade again
    # only the other mixed group is left to grade
    assert [job.group.uid for job in queue_step(step=step, backend="heuristic")] == ["mixed-b@1"]


def test_reviewer_cannot_start_grading_and_strangers_get_404(client, bob, carol, step):
    client.force_login(bob)  # bob is a reviewer: may look, may not start
    assert client.get(URL).status_code == 200
    assert client.post(URL, {"backend": "heuristic"}).status_code == 403
    assert not GradingJob.objects.exists()
    client.force_login(carol)  # carol is not in acme
    assert client.get(URL).status_code == 404
    client.logout()
    assert client.get(URL).status_code == 302


@override_settings(GRADER_BASE_URL="", GRADER_MODEL="")
def test_unconfigured_llm_backend_is_refused_with_a_message(client, alice, step):
    client.force_login(alice)
    r = client.post(URL, {"backend": "llm"}, follow=True)
    assert "Grading not started: the LLM grader needs GRADER_BASE_URL and GRADER_MODEL" in r.content.decode()
    assert not GradingJob.objects.exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://localhost/v1",
        "http://169.254.169.254/latest",
        "http://10.0.0.5/v1",
        "http://[::1]:9000/v1",
        "ftp://example.org/v1",
    ],
)
def test_grader_url_refuses_non_public_targets(url):
    with pytest.raises(GraderUnavailable):
        check_grader_url(url)


@override_settings(GRADER_ALLOW_PRIVATE_NETWORK=True)
def test_grader_url_allows_a_local_server_when_settings_say_so():
    check_grader_url("http://127.0.0.1:8000/v1")


def test_grade_command_waits_and_summarises(step):
    out = StringIO()
    call_command("grade", "--project", "acme", "--run", "r1", "--step", "1", "--no-progress", stdout=out)
    assert "step 1: 2 mixed groups · verdicts valid 2, invalid 0, timeout 0" in out.getvalue()


def test_evidence_links_open_at_the_cited_line_or_turn(client, alice):
    """Demo groups graded by the heuristic grader: every citation on the group page points at
    an element that exists (a patch row on the page, or a turn in the turns view)."""
    call_command(
        "seed_demo",
        "--project",
        "acme",
        "--username",
        "alice",
        "--steps",
        "1",
        "--groups-per-step",
        "6",
        "--no-simulate",
        stdout=StringIO(),
    )
    step = Group.objects.filter(run__name="demo-run").first().step
    with_verdict = 0
    for group in step.groups.filter(is_mixed=True):
        grade_group(group_id=group.pk, backend="heuristic")
    client.force_login(alice)
    checked = 0
    for group in step.groups.filter(is_mixed=True):
        page = client.get(f"/projects/acme/runs/demo-run/groups/{group.uid}/").content.decode()
        if "Grader verdict" in page:
            with_verdict += 1
        for href in re.findall(r'<li><a href="([^"]+)"[^>]*>(?:patch|turn|test) ', page):
            href = href.replace("&amp;", "&")
            if href.startswith("#"):
                assert f'id="{href[1:]}"' in page, href
            else:
                path, _, fragment = href.partition("#")
                turns = client.get(path).content.decode()
                assert f'id="{fragment}"' in turns, href
            checked += 1
    assert with_verdict == step.groups.filter(is_mixed=True).count() and checked > 0


def test_a_grading_costs_its_tokens_at_the_configured_prices_or_nothing_is_said():
    from grading.jobs.grade import cost_usd

    usage = {"prompt_tokens": 200_000, "completion_tokens": 10_000}
    with override_settings(GRADER_PRICE_PER_MTOK_IN=3.0, GRADER_PRICE_PER_MTOK_OUT=15.0):
        assert cost_usd("llm", usage) == pytest.approx(0.6 + 0.15)
        assert cost_usd("heuristic", usage) is None  # no model, no price
    with override_settings(GRADER_PRICE_PER_MTOK_IN=3.0, GRADER_PRICE_PER_MTOK_OUT=None):
        assert cost_usd("llm", usage) is None  # half a price is no price
