"""A real Celery worker on Redis grades a step with the LLM backend against a local
OpenAI-compatible server; a worker killed mid-task leaves exactly one verdict per group."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from django.test import override_settings

from grading.jobs.grade import queue_step
from grading.models import Group, Verdict
from tests.helpers.fake_openai import RUBRIC_SCORES, FakeOpenAI, submit
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.workers import start_celery_worker, stop_process

SCORES = RUBRIC_SCORES

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (os.environ.get("CELERY_BROKER_URL") and os.environ.get("DATABASE_URL")),
        reason="needs a real broker and PostgreSQL (CI sets CELERY_BROKER_URL and DATABASE_URL)",
    ),
]


def start_worker(fake: FakeOpenAI, name: str, log) -> subprocess.Popen:
    # Redelivery after a lost worker waits for the visibility timeout; keep it short here.
    return start_celery_worker(
        name,
        log,
        GRADER_BASE_URL=fake.base_url,
        GRADER_MODEL="fake-model",
        GRADER_ALLOW_PRIVATE_NETWORK="true",
        CELERY_VISIBILITY_TIMEOUT="6",
        CELERY_TASK_TIME_LIMIT="5",
        CELERY_UNACKED_RESTORE_INTERVAL="1",
    )


def answer(request: dict):
    """Slow enough to kill the worker mid-call; then a valid verdict for the passing rollout."""
    time.sleep(1.5)
    return submit([{"rollout": 0, "tier": "T1", "rank": 1, "scores": SCORES, "cheat": False, "evidence": []}])


def test_killed_worker_leaves_one_verdict_per_group(acme, tmp_path):
    from gagar_web.celery import app

    for i in range(3):
        ingest_groups(acme, small_group(f"k{i}@1", instance_id=f"t-{i}", rewards=(1, 0)))
    step = Group.objects.get(uid="k0@1").step
    with (
        FakeOpenAI(responder=answer) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True),
    ):
        app.conf.task_always_eager = False
        app.control.purge()
        log = (tmp_path / "workers.log").open("w+")
        first = start_worker(fake, "first", log)
        second = None
        try:
            queue_step(step=step, backend="llm")
            deadline = time.monotonic() + 60
            while not fake.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            if not fake.requests:
                log.seek(0)
                pytest.fail("the first worker never called the grader:\n" + log.read()[-3000:])
            os.killpg(first.pid, signal.SIGKILL)  # mid-call: no verdict stored, message not acked
            first.wait(timeout=10)
            second = start_worker(fake, "second", log)
            deadline = time.monotonic() + 90
            while Verdict.objects.filter(group__step=step).count() < 3 and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(2)  # let any duplicate delivery land, if there were one
            per_group = {g.uid: g.verdicts.count() for g in step.groups.all()}
            assert per_group == {"k0@1": 1, "k1@1": 1, "k2@1": 1}
            assert set(Verdict.objects.values_list("status", flat=True)) == {"valid"}
        finally:
            app.conf.task_always_eager = True
            stop_process(first)
            stop_process(second)


def test_a_job_whose_worker_cannot_reach_the_database_is_graded_after_the_sweep(acme, tmp_path):
    """PostgreSQL refuses the worker: its task retries, cannot even write that it gave up, and
    leaves the job `queued`; the sweep sends it again and a worker that can reach it grades it."""
    from datetime import timedelta

    from django.utils import timezone

    from gagar_web.celery import app
    from grading.jobs.recovery import sweep
    from grading.models import GradingJob

    ingest_groups(acme, small_group("lost@1", instance_id="t-lost", rewards=(1, 0)))
    step = Group.objects.get(uid="lost@1").step
    app.conf.task_always_eager = False
    app.control.purge()
    log_path = tmp_path / "workers.log"
    log = log_path.open("w+")
    refused = start_celery_worker(
        "refused",
        log,
        DATABASE_URL="postgres://nobody@127.0.0.1:1/none",  # nothing listens: every query is refused
        GAGAR_GRADING_RETRIES="2",
        GAGAR_GRADING_RETRY_BACKOFF="1",
    )
    able = None
    try:
        queue_step(step=step, backend="heuristic")
        deadline = time.monotonic() + 60
        while "could not mark the job" not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "could not mark the job" in log_path.read_text(), log_path.read_text()[-3000:]
        stop_process(refused)
        job = GradingJob.objects.get()
        assert (job.status, job.verdict_id) == ("queued", None)  # nothing could be written: it looks lost
        GradingJob.objects.update(queued_at=timezone.now() - timedelta(hours=1))
        able = start_celery_worker("able", log)
        assert sweep()["resent"] == 1
        deadline = time.monotonic() + 60
        # the job's own end, not the verdict: the worker stores the verdict, then finishes the job
        while job.status not in ("done", "failed") and time.monotonic() < deadline:
            time.sleep(0.2)
            job.refresh_from_db()
        assert (job.status, job.resends, Verdict.objects.get().status) == ("done", 1, "valid"), log_path.read_text()[-3000:]
    finally:
        app.conf.task_always_eager = True
        stop_process(refused)
        stop_process(able)
