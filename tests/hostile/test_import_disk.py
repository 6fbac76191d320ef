"""Imports clean up after themselves (second security review: import bombs left on disk).

Before, a 2 MB zip that unpacked to 2 GiB ended `done` with its one big file skipped and the
2.1 GB left in MEDIA_ROOT; no `done` job ever removed what it unpacked (one afternoon's
imports left 6.4 GB), and the only bound was 50 GiB per upload. Now a job's folder goes when
it ends, whatever its status; a project's imports may keep at most GAGAR_IMPORT_QUOTA_BYTES
on disk at once (an upload past it is refused before it is written, unpacking stops where it
would pass it); an hourly beat task removes folders a day old that no active job owns; the
import page says what is kept.

alice is admin of acme (she may import); the bomb is scaled down (130 MB of zeros in a
130 kB zip, just over the 128 MB per-file limit) so the test costs about a second.
"""

from __future__ import annotations

import io
import os
import time
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from grading.ingest.importers.common import MAX_JSON_BYTES, MB
from grading.models import Group, ImportJob
from tests.helpers import import_files as b
from tests.hostile.corpus import record

A = "octo__widgets-101"
URL = "/api/v1/imports/?project=acme"


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def zipped(name: str, folder, *, zeros: int = 0) -> SimpleUploadedFile:
    """`folder` as a zip, plus (with `zeros`) a trajectory of that many zero bytes: it compresses ~1000:1."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")
        if zeros:
            with zf.open(f"{folder.name}/trajs/bomb/bomb.traj.json", "w", force_zip64=True) as out:
                block = bytes(MB)
                for _ in range(zeros // MB):
                    out.write(block)
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/zip")


def post(client, token, files, capture=None):
    data = {"run": "sweep", "step": "3", "file": files}
    if capture is None:  # the job stays queued: its commit callback (the task) never runs
        return client.post(URL, data, HTTP_AUTHORIZATION=f"Token {token}")
    with capture(execute=True):
        return client.post(URL, data, HTTP_AUTHORIZATION=f"Token {token}")


def kept(media) -> list[str]:
    return sorted(p.relative_to(media).as_posix() for p in (media / "imports").rglob("*") if p.is_file())


@pytest.mark.django_db
def test_an_unpacked_bomb_is_removed_when_its_job_is_done(
    client, acme, alice_token, media, tmp_path, django_capture_on_commit_callbacks
):
    bomb = zipped("run-1.zip", b.mini_run(tmp_path / "run-1", {A: True}), zeros=MAX_JSON_BYTES + 2 * MB)
    assert bomb.size < MB
    r = post(client, alice_token, [bomb], capture=django_capture_on_commit_callbacks)
    job = ImportJob.objects.get(pk=r.json()["id"])
    skipped = {s["ref"] for s in job.summary.get("skipped", [])}
    ok = (
        job.status == "done"
        and Group.objects.filter(uid=f"{A}@3").exists()
        and "run-1/trajs/bomb/bomb.traj.json" in skipped
        and kept(media) == []
        and job.disk_bytes == 0
    )
    record("agent-run import", "130 MB member of a 130 kB zip left on disk by a done job", "refused" if ok else "FAILED")
    assert ok, (job.status, skipped, kept(media)[:5], job.disk_bytes)


@pytest.mark.django_db
def test_an_upload_past_the_projects_quota_is_refused_before_it_is_written(client, acme, alice_token, media, tmp_path, settings):
    first = zipped("run-1.zip", b.mini_run(tmp_path / "run-1", {A: True}))
    settings.GAGAR_IMPORT_QUOTA_BYTES = first.size + 1000  # room for the first, not for two
    assert post(client, alice_token, [first]).status_code == 202  # queued: its upload is kept until it runs
    held = kept(media)
    second = zipped("run-2.zip", b.mini_run(tmp_path / "run-2", {A: True}, seed=2))
    r = post(client, alice_token, [second])
    body = r.json()
    ok = (
        r.status_code == 400
        and "quota" in body["detail"]
        and "GAGAR_IMPORT_QUOTA_BYTES" in body["detail"]
        and f"{first.size:,}" in body["detail"]
        and kept(media) == held
        and ImportJob.objects.count() == 1
    )
    record("agent-run import", "upload past the project's disk quota", "refused" if ok else "FAILED")
    assert ok, (r.status_code, body, kept(media))


@pytest.mark.django_db
def test_unpacking_stops_at_the_projects_quota(
    client, acme, alice_token, media, tmp_path, settings, django_capture_on_commit_callbacks
):
    bomb = zipped("run-1.zip", b.mini_run(tmp_path / "run-1", {A: True}), zeros=8 * MB)
    settings.GAGAR_IMPORT_QUOTA_BYTES = 4 * MB  # holds the upload, not what it unpacks to
    r = post(client, alice_token, [bomb], capture=django_capture_on_commit_callbacks)
    job = ImportJob.objects.get(pk=r.json()["id"])
    ok = (
        r.status_code == 202
        and job.status == "failed"
        and "archive 'run-1.zip' refused: unpacks to more than" in job.error
        and "GAGAR_IMPORT_QUOTA_BYTES" in job.error
        and kept(media) == []
        and job.disk_bytes == 0
    )
    record("agent-run import", "archive unpacking past the project's disk quota", "refused" if ok else "FAILED")
    assert ok, (job.status, job.error, kept(media)[:5])


@pytest.mark.django_db
def test_orphaned_upload_folders_a_day_old_are_removed(client, acme, alice_token, media, tmp_path):
    from gagar_web.celery import app
    from grading.ingest.tasks import remove_orphan_uploads_task

    assert post(client, alice_token, [zipped("run-1.zip", b.mini_run(tmp_path / "run-1", {A: True}))]).status_code == 202
    (owned,) = (media / "imports").iterdir()  # a queued job's: kept however long it waits
    orphan, fresh = media / "imports" / ("a" * 32), media / "imports" / ("b" * 32)
    for folder in (orphan, fresh):
        (folder / "run-9" / "trajs").mkdir(parents=True)
        (folder / "run-9" / "trajs" / "x.traj.json").write_bytes(b"{}")
    two_days_ago = time.time() - 2 * 86400
    for folder in (owned, orphan):
        os.utime(folder, (two_days_ago, two_days_ago))
    assert remove_orphan_uploads_task.delay().get() == 1
    left = sorted(p.name for p in (media / "imports").iterdir())
    ok = left == sorted([owned.name, fresh.name])
    record("agent-run import", "upload folder orphaned by a killed process", "refused" if ok else "FAILED")
    assert ok, left
    schedule = {entry["task"] for entry in app.conf.beat_schedule.values()}
    assert "grading.remove_orphan_uploads" in schedule and "grading.remove_orphan_uploads" in app.tasks


@pytest.mark.django_db
def test_the_import_page_shows_what_is_kept_on_disk(
    client, acme, alice, alice_token, media, tmp_path, django_capture_on_commit_callbacks
):
    upload = zipped("run-1.zip", b.mini_run(tmp_path / "run-1", {A: True}))
    post(client, alice_token, [upload])  # queued: its upload is on disk
    post(
        client,
        alice_token,
        [zipped("run-2.zip", b.mini_run(tmp_path / "run-2", {A: True}))],
        capture=django_capture_on_commit_callbacks,
    )  # done: nothing
    client.force_login(alice)
    r = client.get("/projects/acme/runs/sweep/imports/")
    assert r.status_code == 200
    text = r.content.decode()
    from django.template.defaultfilters import filesizeformat

    assert f"Kept on disk for project acme: <strong>{filesizeformat(upload.size)}</strong>" in text
    assert text.count('data-testid="import-disk-bytes"') == 2 and ">nothing<" in text
