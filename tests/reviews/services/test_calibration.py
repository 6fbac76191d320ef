"""After judgments change, a worker computes the calibration figures into the shared cache,
so the next calibration view or agreement call resamples nothing."""

from __future__ import annotations

import os
import time

import pytest
from django.core.cache import cache
from django.test import override_settings

from reviews.selectors import calibration as data
from reviews.services.calibration import WARM_FLAG, schedule_warm, warm_calibration, warmed_at
from reviews.services.judgments import ItemInput, submit_judgment
from tests.helpers.workers import start_celery_worker, stop_process

REAL = bool(os.environ.get("CELERY_BROKER_URL") and os.environ.get("DATABASE_URL"))


def count_resampling(monkeypatch) -> list:
    calls: list = []
    for name in ("report_from_statistics", "bootstrap_mapping", "ceiling_report", "step_inputs"):
        real = getattr(data, name)
        monkeypatch.setattr(data, name, lambda *a, _real=real, **k: calls.append(1) or _real(*a, **k))
    return calls


@pytest.mark.django_db
def test_nothing_is_queued_where_tasks_run_eagerly_or_the_cache_is_per_process(judged):
    run_id = judged["g1@1"].run_id
    assert schedule_warm(run_id=run_id) is False  # the test settings: eager Celery, local-memory cache
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        assert schedule_warm(run_id=run_id) is False  # a worker's local cache would help nobody
    assert cache.get(WARM_FLAG.format(run_id=run_id)) is None


@pytest.mark.django_db
def test_warming_computes_everything_the_page_and_the_api_show(client, alice, judged, monkeypatch):
    run_id = judged["g1@1"].run_id
    warm_calibration(run_id=run_id)
    assert warmed_at(run_id=run_id) is not None
    calls = count_resampling(monkeypatch)
    client.force_login(alice)
    page = client.get("/projects/acme/calibration/")
    assert page.status_code == 200 and b"Agreement" in page.content
    api = client.get("/api/v1/agreement/", {"project": "acme", "run": "r1", "slices": "true"})
    assert api.status_code == 200 and api.json()["n_groups"] > 0
    assert calls == []  # every figure came from the cache


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not REAL, reason="needs a real broker and PostgreSQL (CI sets CELERY_BROKER_URL and DATABASE_URL)")
@pytest.mark.slow
def test_a_real_worker_warms_the_figures_a_judgment_changed(client, alice, judged, erin, monkeypatch, tmp_path):
    from gagar_web.celery import app

    redis_cache = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["CELERY_BROKER_URL"],
            "KEY_PREFIX": f"gagar-test-{os.getpid()}",
        }
    }
    run_id = judged["g1@1"].run_id
    with override_settings(CACHES=redis_cache, CELERY_TASK_ALWAYS_EAGER=False):
        app.conf.task_always_eager = False
        app.control.purge()
        log = (tmp_path / "worker.log").open("w+")
        worker = start_celery_worker(
            "warm",
            log,
            GAGAR_CACHE_URL=os.environ["CELERY_BROKER_URL"],
            GAGAR_CACHE_KEY_PREFIX=redis_cache["default"]["KEY_PREFIX"],
        )
        try:
            submit_judgment(
                reviewer=erin, group=judged["g1@1"], items=[ItemInput(0, "T2"), ItemInput(1, "T1"), ItemInput(3, "T3")]
            )
            assert cache.get(WARM_FLAG.format(run_id=run_id)) == 1  # queued once for the burst
            # a second change in the same burst finds it queued
            assert schedule_warm(run_id=run_id) is False
            deadline = time.monotonic() + 120
            while warmed_at(run_id=run_id) is None:  # the worker's own marker, set when it is done
                if worker.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail("the worker did not warm the figures:\n" + log.read()[-3000:])
                time.sleep(0.2)
            calls = count_resampling(monkeypatch)
            client.force_login(alice)
            page = client.get("/projects/acme/calibration/")
            assert page.status_code == 200
            assert calls == []  # the worker computed the figures that erin's judgment changed
        finally:
            app.conf.task_always_eager = True
            stop_process(worker)


@pytest.mark.django_db
def test_the_preview_is_computed_again_only_when_the_steps_inputs_change(judged, monkeypatch):
    from grading.method.advantage import MappingSpec
    from grading.method.services.staleness import mark_stale

    step = judged["g1@1"].step
    proposed = MappingSpec.from_dict({"T1": [1.0, 1.0], "T2": [0.8, 0.6], "T3": [0.4, 0.4]})
    calls = count_resampling(monkeypatch)
    first = data.preview(step=step, proposed=proposed)
    assert len(calls) == 1 and first.n_rollouts > 0
    assert data.preview(step=step, proposed=proposed).n_changed == first.n_changed and len(calls) == 1
    data.preview(step=step, proposed=MappingSpec.from_dict({"T1": [1.0, 1.0], "T2": [0.9, 0.9], "T3": [0.5, 0.5]}))
    assert len(calls) == 2  # other bands: another preview
    mark_stale(step_ids=[step.pk])  # a verdict or a cheat decision changed the step's inputs
    step.refresh_from_db()
    data.preview(step=step, proposed=proposed)
    assert len(calls) == 3


@pytest.mark.django_db
def test_a_view_of_unchanged_judgments_reads_no_frames(client, alice, dan, judged, monkeypatch):
    frames_read = []
    real = data.judgment_frames
    monkeypatch.setattr(data, "judgment_frames", lambda **k: frames_read.append(1) or real(**k))
    client.force_login(alice)
    first = client.get("/projects/acme/calibration/?run=r1").context["overall"]
    assert len(frames_read) == 1
    assert client.get("/projects/acme/calibration/?run=r1").context["overall"] == first
    assert client.get("/api/v1/agreement/", {"project": "acme", "run": "r1", "slices": "true"}).status_code == 200
    assert len(frames_read) == 1  # the page again and the API (same figures): the scope's fingerprint, then the cache
    submit_judgment(reviewer=dan, group=judged["g2@1"], items=[ItemInput(0, "T3"), ItemInput(1, "T3"), ItemInput(3, "T1")])
    assert client.get("/projects/acme/calibration/?run=r1").context["overall"] != first
    assert len(frames_read) == 2
