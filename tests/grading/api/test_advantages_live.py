"""The trainer's client against a live server, the export command, and a real Celery worker."""

from __future__ import annotations

import io
import os
import subprocess
import time

import pandas as pd
import pytest
from django.core.management import call_command

from gagar_client import Client, GagarError
from grading.models import Group, StepComputation
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.workers import start_celery_worker, stop_process


@pytest.fixture
def worked_example(acme):
    report = ingest_groups(acme, small_group("g1@1", rewards=(1, 1, 1, 0, 0, 0)))
    assert report.groups_created == 1
    group = Group.objects.get(uid="g1@1")
    return group


@pytest.mark.django_db(transaction=True)
def test_fetch_advantages_from_a_live_server(live_server, trainer_token, worked_example):
    record_verdict(
        group=worked_example,
        grader="test@1",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2), GradeInput(2, "T3", 3)],
    )
    gagar = Client(live_server.url, trainer_token, project="acme")
    frame = gagar.advantages_frame("r1", 1)
    assert frame["redistributed_advantage"].round(6).tolist() == [0.638298, 0.542553, 0.319149, -0.5, -0.5, -0.5]
    assert frame["status"].unique().tolist() == ["graded"]
    with pytest.raises(GagarError, match="no run 'nope'") as refused:
        gagar.advantages("nope", 1)
    assert refused.value.status == 404


@pytest.mark.django_db
def test_export_command_writes_every_format(tmp_path, worked_example):
    frames = {}
    for fmt in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"x.{fmt}"
        call_command(
            "export_advantages",
            "--project",
            "acme",
            "--run",
            "r1",
            "--format",
            fmt,
            "-o",
            str(out),
            "--no-progress",
            stderr=io.StringIO(),
        )
        frames[fmt] = {"jsonl": lambda p: pd.read_json(p, lines=True), "csv": pd.read_csv, "parquet": pd.read_parquet}[fmt](out)
    for fmt in ("csv", "parquet"):
        assert frames[fmt]["advantage"].tolist() == frames["jsonl"]["advantage"].tolist()
    assert frames["jsonl"]["status"].unique().tolist() == ["fallback"]  # no verdict yet


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    not (os.environ.get("CELERY_BROKER_URL") and os.environ.get("DATABASE_URL")),
    reason="needs a real broker and PostgreSQL (CI sets CELERY_BROKER_URL and DATABASE_URL)",
)
@pytest.mark.slow
def test_real_worker_recomputes_after_a_verdict(worked_example, settings):
    """A verdict queues recompute_step_task after the commit; a real worker process runs it."""
    from gagar_web.celery import app

    app.conf.task_always_eager = False
    app.conf.broker_url = os.environ["CELERY_BROKER_URL"]
    worker = start_celery_worker("recompute", subprocess.DEVNULL, queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    try:
        app.control.purge()
        record_verdict(
            group=worked_example,
            grader="test@1",
            status="valid",
            grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2), GradeInput(2, "T3", 3)],
        )
        deadline = time.monotonic() + 60
        computation = None
        while time.monotonic() < deadline:
            computation = StepComputation.objects.filter(step=worked_example.step, stale=False).first()
            if computation:
                break
            time.sleep(0.5)
        assert computation is not None, "the worker never recomputed the step"
        assert computation.summary["groups"]["graded"] == 1
        assert round(computation.summary["dropped_credit"], 6) == 0.325
    finally:
        app.conf.task_always_eager = True
        stop_process(worker)
