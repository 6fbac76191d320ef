"""Grading jobs are never lost: a task that meets a database error is retried and then grades
or fails with its error on the step page and in the API; the sweep sends again the jobs no
task holds and fails those past their resends, also when two sweeps run at once."""

from __future__ import annotations

import random
import threading
from collections import Counter
from datetime import timedelta
from unittest import mock

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.test import override_settings
from django.utils import timezone

from grading.grader.heuristic import HeuristicGrader
from grading.jobs import grade as job_service
from grading.jobs import recovery
from grading.jobs.grade import queue_step
from grading.jobs.tasks import grade_group_task
from grading.models import GradingJob, Group, Verdict
from grading.waits.progress import step_status
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

# Transactional: jobs are queued after the commit and graded there (eager Celery), as in production.
pytestmark = pytest.mark.django_db(transaction=True)

PAGE = "/projects/acme/runs/r1/steps/1/grading/"
TOO_MANY = "connection failed: FATAL: sorry, too many clients already"


def mixed_step(acme, n: int = 2):
    ingest_groups(acme, *(small_group(f"m{i}@1", instance_id=f"t-{i}", rewards=(1, 0)) for i in range(n)))
    return Group.objects.get(uid="m0@1").step


def failing(times: int, real):
    """`real`, after raising the refused-connection error `times` times."""
    calls = {"n": 0}

    def run(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] <= times:
            raise OperationalError(TOO_MANY)
        return real(*args, **kwargs)

    return run


def model_calls():
    """The heuristic grader's grade(), counting its calls."""
    real = HeuristicGrader.grade
    calls: list[int] = []

    def grade(self, workspace):
        calls.append(1)
        return real(self, workspace)

    return calls, mock.patch.object(HeuristicGrader, "grade", grade)


# --- the task's retries ------------------------------------------------------------------------


def test_a_database_error_before_grading_is_retried_and_the_group_is_graded(acme):
    step = mixed_step(acme, 1)
    calls, counting = model_calls()
    with counting, mock.patch.object(job_service, "load_workspace", failing(2, job_service.load_workspace)):
        queue_step(step=step, backend="heuristic")
    job = GradingJob.objects.get()
    assert (job.status, job.retries, job.attempts) == ("done", 2, 3)
    assert Verdict.objects.get().status == "valid" and len(calls) == 1
    assert step_status(step).graded == 1


def test_a_verdict_stored_before_the_error_is_not_graded_again(acme):
    step = mixed_step(acme, 1)
    calls, counting = model_calls()
    # The verdict is stored, then finishing its job meets the error.
    with counting, mock.patch.object(job_service, "finish_job", failing(1, job_service.finish_job)):
        queue_step(step=step, backend="heuristic")
    job = GradingJob.objects.get()
    assert (job.status, job.retries, job.verdict_id) == ("done", 1, Verdict.objects.get().pk)
    assert len(calls) == 1  # the retry found the verdict: no second model call


@override_settings(GAGAR_GRADING_RETRIES=2)
def test_a_task_that_always_fails_fails_its_job_with_the_error_on_the_page_and_in_the_api(
    acme, client, bob, trainer_token, django_assert_num_queries
):
    step = mixed_step(acme, 2)
    with mock.patch.object(job_service, "load_workspace", side_effect=OperationalError(TOO_MANY)):
        queue_step(step=step, backend="heuristic")
    jobs = list(GradingJob.objects.order_by("group__uid"))
    assert [(j.status, j.retries, j.verdict_id) for j in jobs] == [("failed", 2, None)] * 2
    assert all(TOO_MANY in j.error and "gave up after 2 retries" in j.error for j in jobs)
    assert not Verdict.objects.exists()

    # Nothing will grade them: they fall back now, not at the deadline.
    status = step_status(step)
    assert (status.pending, status.fallback, status.failed, status.final) == (0, 2, 2, True)

    # the status's 12 and the run's health up to the step: the mapping (2), the trainer's series, the desk's (4)
    with django_assert_num_queries(19):
        r = client.get("/api/v1/steps/1/?project=acme&run=r1", HTTP_AUTHORIZATION=f"Bearer {trainer_token}")
    body = r.json()
    assert (body["failed"], body["pending"], body["final"]) == (2, 0, True)
    assert [(f["group"], f["grader"], f["retries"], f["resends"]) for f in body["failures"]] == [
        ("m0@1", "heuristic@1", 2, 0),
        ("m1@1", "heuristic@1", 2, 0),
    ]
    assert TOO_MANY in body["failures"][0]["error"]

    client.force_login(bob)
    page = client.get(PAGE).content.decode()
    assert 'id="grading-failed">2<' in page
    assert "Grading gave up on 2 groups after its retries" in page
    assert page.count(TOO_MANY) >= 2 and "m0@1" in page

    # Grading the step again starts them afresh: pending while queued, graded after.
    queue_step(step=step, backend="heuristic")
    assert set(GradingJob.objects.values_list("status", "retries")) == {("done", 0)}
    assert step_status(step).failed == 0 and not step_status(step).failures


def test_the_step_lists_the_first_failures_in_a_fixed_number_of_queries(acme, client, trainer_token, django_assert_num_queries):
    step = mixed_step(acme, 7)
    queue_step(step=step, backend="heuristic")
    GradingJob.objects.update(status=GradingJob.Status.FAILED, verdict=None, error="lost: never picked up by a worker")
    Verdict.objects.all().delete()
    with django_assert_num_queries(19):  # as above: the status and the run's health
        body = client.get("/api/v1/steps/1/?project=acme&run=r1", HTTP_AUTHORIZATION=f"Bearer {trainer_token}").json()
    assert body["failed"] == 7
    assert [f["group"] for f in body["failures"]] == [f"m{i}@1" for i in range(5)]


def test_a_failed_job_beside_one_still_queued_keeps_the_group_pending(acme):
    step = mixed_step(acme, 1)
    group = step.groups.get()
    GradingJob.objects.create(group=group, grader="heuristic@1", status=GradingJob.Status.FAILED, error="gave up")
    GradingJob.objects.create(group=group, grader="ext@1", status=GradingJob.Status.QUEUED)
    status = step_status(step)
    assert (status.pending, status.failed) == (1, 0)


def test_the_backoff_doubles_with_jitter_up_to_its_cap():
    rng = random.Random(7)
    delays = [recovery.retry_delay(n, base=2, cap=300, rng=rng) for n in range(12)]
    for n, delay in enumerate(delays):
        step = min(300, 2 * 2**n)
        assert step / 2 <= delay <= step
    assert len(set(delays)) == len(delays)  # jittered: no two retries in step


# --- the sweep -------------------------------------------------------------------------------


def stranded(step, *, status=GradingJob.Status.QUEUED, age: int = 4000, **fields) -> list[GradingJob]:
    """Jobs for the step's mixed groups that no task holds: written, never sent (or started `age` s ago)."""
    long_ago = timezone.now() - timedelta(seconds=age)
    jobs = [GradingJob(group=g, grader="heuristic@1", status=status, **fields) for g in step.groups.filter(is_mixed=True)]
    GradingJob.objects.bulk_create(jobs)
    GradingJob.objects.update(queued_at=long_ago, started_at=long_ago if status == GradingJob.Status.RUNNING else None)
    return jobs


def test_the_sweep_sends_a_job_left_queued_with_no_task_and_it_is_graded(acme):
    step = mixed_step(acme, 2)
    stranded(step)
    assert step_status(step).pending == 2  # stored, queued, never sent: it would wait for the deadline
    assert recovery.sweep() == {"resent": 2, "failed": 0, "finished": 0}
    assert set(GradingJob.objects.values_list("status", "resends")) == {("done", 1)}
    assert Verdict.objects.filter(status="valid").count() == 2
    assert recovery.sweep() == {"resent": 0, "failed": 0, "finished": 0}


def test_the_sweep_leaves_queued_jobs_alone_while_workers_are_taking_others(acme):
    step = mixed_step(acme, 2)
    stranded(step)
    GradingJob.objects.filter(group__uid="m1@1").update(
        status=GradingJob.Status.RUNNING, started_at=timezone.now() - timedelta(seconds=5)
    )
    assert recovery.sweep()["resent"] == 0  # a backlog being drained, not a lost message
    assert GradingJob.objects.get(group__uid="m0@1").status == "queued"


def test_the_sweep_sends_a_job_running_past_the_hard_limit_and_fails_one_past_its_resends(acme, settings):
    step = mixed_step(acme, 2)
    stranded(step, status=GradingJob.Status.RUNNING, age=settings.CELERY_TASK_TIME_LIMIT + 120)
    GradingJob.objects.filter(group__uid="m1@1").update(resends=settings.GAGAR_GRADING_SWEEP_RESENDS)
    assert recovery.sweep() == {"resent": 1, "failed": 1, "finished": 0}
    jobs = {j.group.uid: j for j in GradingJob.objects.select_related("group")}
    assert (jobs["m0@1"].status, jobs["m0@1"].resends) == ("done", 1)
    lost = jobs["m1@1"]
    assert (lost.status, lost.verdict_id) == ("failed", None)
    assert lost.error == f"lost: its worker stopped without finishing (sent {settings.GAGAR_GRADING_SWEEP_RESENDS + 1} times)"
    status = step_status(step)
    assert (status.graded, status.failed, status.pending, status.final) == (1, 1, 0, True)
    assert status.failures[0]["group"] == "m1@1" and status.failures[0]["error"] == lost.error


@override_settings(GAGAR_GRADING_SWEEP_RESENDS=0)
def test_a_job_never_picked_up_fails_as_lost(acme):
    step = mixed_step(acme, 1)
    stranded(step)
    assert recovery.sweep()["failed"] == 1
    assert GradingJob.objects.get().error == "lost: never picked up by a worker (sent 1 times)"


def test_the_sweep_finishes_a_job_whose_verdict_landed_and_skips_a_campaigns(acme):
    step = mixed_step(acme, 1)
    group = step.groups.get()
    job_service.grade_group(group_id=group.pk, backend="heuristic")
    GradingJob.objects.update(status=GradingJob.Status.RUNNING, verdict=None, started_at=timezone.now() - timedelta(days=1))
    GradingJob.objects.update(queued_at=timezone.now() - timedelta(days=1))
    calls, counting = model_calls()
    with counting:
        assert recovery.sweep() == {"resent": 0, "failed": 0, "finished": 1}
    assert GradingJob.objects.get().status == "done" and not calls


# --- two sweeps at once (PostgreSQL: row locks) -------------------------------------------------


def test_two_sweeps_at_once_send_each_job_once(acme):
    if connection.vendor != "postgresql":
        pytest.skip("row locks (select_for_update skip_locked) need PostgreSQL")
    step = mixed_step(acme, 4)
    stranded(step)
    sent: list[int] = []
    lock = threading.Lock()

    def record(*, group_id, backend):
        with lock:
            sent.append(group_id)

    held, release = threading.Event(), threading.Event()
    first = step.groups.order_by("uid").first()

    def hold_one_job():  # another sweep, in the middle of its transaction on one job
        try:
            with transaction.atomic():
                list(GradingJob.objects.filter(group=first).select_for_update())
                held.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_one_job)
    with mock.patch.object(grade_group_task, "delay", side_effect=record):
        holder.start()
        assert held.wait(30)
        counts = recovery.sweep()  # skips the locked job instead of waiting on it
        release.set()
        holder.join(30)
        assert counts["resent"] == 3 and first.pk not in sent

        results: list[dict] = []
        barrier = threading.Barrier(2)

        def sweep_now():
            try:
                barrier.wait(30)
                results.append(recovery.sweep())
            finally:
                connections.close_all()

        GradingJob.objects.update(due_at=None, status=GradingJob.Status.QUEUED)  # all stranded again
        threads = [threading.Thread(target=sweep_now) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert sum(r["resent"] for r in results) == 4  # each job taken by one of them
    others = [g for g in step.groups.values_list("pk", flat=True) if g != first.pk]
    assert Counter(sent) == Counter({first.pk: 1, **dict.fromkeys(others, 2)})
    resends = dict(GradingJob.objects.values_list("group_id", "resends"))
    assert resends == {first.pk: 1, **dict.fromkeys(others, 2)}
