"""A campaign graded by a REAL Celery worker on Redis and PostgreSQL: chunks queued after the
commit, progress counted by the worker as each group finishes, done when all are counted;
started again, it does nothing. Skipped where CI's broker and database are not set."""

from __future__ import annotations

import os
import time

import pytest

from grading.jobs import campaigns
from grading.jobs.campaigns import Scope, start_campaign
from grading.models import Campaign, Run, Verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.workers import start_celery_worker, stop_process

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (os.environ.get("CELERY_BROKER_URL") and os.environ.get("DATABASE_URL")),
        reason="needs a real broker and PostgreSQL (CI sets CELERY_BROKER_URL and DATABASE_URL)",
    ),
]


@pytest.mark.slow
def test_a_real_worker_runs_a_campaign_chunk_by_chunk(acme, tmp_path, monkeypatch):
    from gagar_web.celery import app

    for i in range(5):
        ingest_groups(acme, small_group(f"w{i}@1", instance_id=f"t-{i}", rewards=(1, 0, 1)))
    run = Run.objects.get(project=acme, name="r1")
    monkeypatch.setattr(campaigns, "CHUNK", 2)  # three chunks for five groups
    app.conf.task_always_eager = False
    app.control.purge()
    log = (tmp_path / "worker.log").open("w+")
    worker = start_celery_worker("campaign", log)
    try:
        campaign = start_campaign(project=acme, grader="heuristic", scope=Scope(Campaign.Scope.RUN, run))
        assert campaign.total == 5 and not campaign.skipped_existing  # the worker has its chunks now
        deadline = time.monotonic() + 90
        while campaign.status in Campaign.ACTIVE and time.monotonic() < deadline:
            time.sleep(0.3)
            campaign.refresh_from_db()
        log.seek(0)
        assert campaign.status == Campaign.Status.DONE, log.read()[-3000:]
        assert (campaign.graded, campaign.failed, campaign.skipped_existing) == (5, 0, 0)
        assert campaign.latency_p50_s is not None and campaign.started_at <= campaign.finished_at
        assert Verdict.objects.filter(grader="heuristic@1", status="valid").count() == 5
        again = start_campaign(project=acme, grader="heuristic", scope=Scope(Campaign.Scope.RUN, run))
        assert (again.status, again.skipped_existing, again.graded) == (Campaign.Status.DONE, 5, 0)  # nothing queued
        assert Verdict.objects.count() == 5
    finally:
        app.conf.task_always_eager = True
        stop_process(worker)
        log.close()
