"""The import job on a REAL Celery worker (subprocess, --pool=solo) with Redis and PostgreSQL.

Runs only where DATABASE_URL and CELERY_BROKER_URL are both set (CI); skipped elsewhere.
The worker talks to the pytest test database (committed rows: transactional_db) and to
its own Redis database and queue, so it never takes another worker's tasks.
"""

from __future__ import annotations

import io
import os
import tarfile
import time
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from grading.models import Group, ImportJob
from tests.grading.importers import builders as b
from tests.helpers import start_celery_worker, stop_process

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BROKER = "redis://127.0.0.1:6379/14"
A, B = "octo__widgets-101", "octo__widgets-102"


@pytest.fixture
def worker(tmp_path):
    if not (os.environ.get("DATABASE_URL") and os.environ.get("CELERY_BROKER_URL")):
        pytest.skip("needs DATABASE_URL and CELERY_BROKER_URL (real PostgreSQL and Redis), as in CI")
    if connection.vendor != "postgresql":
        pytest.skip("the worker needs a database another process can reach (PostgreSQL)")
    queue = f"import-test-{uuid.uuid4().hex[:8]}"
    media = tmp_path / "media"
    log = (tmp_path / "worker.log").open("w")
    proc = start_celery_worker("import", log, queue=queue, loglevel="INFO", CELERY_BROKER_URL=BROKER, GAGAR_MEDIA_ROOT=str(media))
    try:
        yield {"queue": queue, "media": media, "log": tmp_path / "worker.log", "proc": proc}
    finally:
        stop_process(proc)
        log.close()
        import redis

        client = redis.Redis.from_url(BROKER)
        for key in client.scan_iter(f"*{queue}*"):  # kombu's bindings of the test's own queue
            client.delete(key)


def test_upload_is_imported_by_a_real_worker(client, alice_token, worker, settings, monkeypatch, tmp_path):
    import grading.ingest.imports
    from gagar_web.celery import app as current_app

    settings.MEDIA_ROOT = worker["media"]
    current_app.conf.task_always_eager = False  # tests/conftest.py makes tasks eager (and resets it after)
    task = grading.ingest.imports.import_job_task
    sent = []

    class ToTestBroker:
        """The API queues with .delay on the configured broker; here it goes to the worker's own broker and queue."""

        @staticmethod
        def delay(**kwargs):
            with current_app.connection_for_write(BROKER) as conn:
                sent.append(task.apply_async(kwargs=kwargs, connection=conn, queue=worker["queue"]))

    monkeypatch.setattr(grading.ingest.imports, "import_job_task", ToTestBroker)
    run = b.mini_run(tmp_path / "run-1", {A: True, B: False})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        tf.add(run, arcname="run-1")
    r = client.post("/api/v1/imports/?project=acme", {"run": "worker-run", "step": "5", "file": [SimpleUploadedFile("run-1.tar.gz", buffer.getvalue())]},
                    HTTP_AUTHORIZATION=f"Token {alice_token}")
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
