"""The import job on a REAL Celery worker (subprocess, --pool=solo) with Redis and PostgreSQL.

Runs only where DATABASE_URL and CELERY_BROKER_URL are both set (CI); skipped elsewhere.
The worker talks to the pytest test database (committed rows: transactional_db) and to
its own Redis database and queue, so it never takes another worker's tasks.
"""

from __future__ import annotations

import io
import tarfile
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from grading.models import Group, ImportJob
from tests.helpers import import_files as b
from tests.helpers.workers import worker_on_own_queue

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BROKER = "redis://127.0.0.1:6379/14"
A, B = "octo__widgets-101", "octo__widgets-102"


@pytest.fixture
def worker(tmp_path):
    media = tmp_path / "media"
    with worker_on_own_queue("import", tmp_path, BROKER, GAGAR_MEDIA_ROOT=str(media)) as w:
        yield {**w, "media": media}


@pytest.mark.slow
def test_upload_is_imported_by_a_real_worker(client, alice_token, worker, settings, monkeypatch, tmp_path):
    import grading.ingest.tasks
    from gagar_web.celery import app as current_app

    settings.MEDIA_ROOT = worker["media"]
    current_app.conf.task_always_eager = False  # tests/conftest.py makes tasks eager (and resets it after)
    task = grading.ingest.tasks.import_job_task
    sent = []

    class ToTestBroker:
        """The API queues with .delay on the configured broker; here it goes to the worker's own broker and queue."""

        @staticmethod
        def delay(**kwargs):
            with current_app.connection_for_write(BROKER) as conn:
                sent.append(task.apply_async(kwargs=kwargs, connection=conn, queue=worker["queue"]))

    monkeypatch.setattr(task, "delay", ToTestBroker.delay)
    run = b.mini_run(tmp_path / "run-1", {A: True, B: False})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        tf.add(run, arcname="run-1")
    r = client.post(
        "/api/v1/imports/?project=acme",
        {"run": "worker-run", "step": "5", "file": [SimpleUploadedFile("run-1.tar.gz", buffer.getvalue())]},
        HTTP_AUTHORIZATION=f"Token {alice_token}",
    )
    assert r.status_code == 202, r.content
    assert len(sent) == 1 and r.json()["status"] == "queued"
    deadline = time.monotonic() + 90
    status = "queued"
    while time.monotonic() < deadline and status in ("queued", "running"):
        time.sleep(0.3)
        status = client.get(r["Location"], HTTP_AUTHORIZATION=f"Token {alice_token}").json()["status"]
        assert worker["proc"].poll() is None, worker["log"].read_text()[-3000:]
    assert status == "done", worker["log"].read_text()[-3000:]
    job = ImportJob.objects.get()
    assert job.summary["groups"]["created"] == 2 and job.started_at and job.finished_at
    assert Group.objects.get(uid=f"{A}@5").n_passed == 1
    assert "grading.import_job" in worker["log"].read_text()
