"""POST /api/v1/imports/ (upload -> ImportJob -> Celery, eager: tests/conftest.py), GET the job,
the run page's progress, refusals."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from grading.models import Group, ImportJob, Rollout, Run
from tests.helpers import import_files as b

pytestmark = pytest.mark.django_db

URL = "/api/v1/imports/?project=acme"
A, B = "octo__widgets-101", "octo__widgets-102"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def tgz(name: str, folder, arcname: str | None = None) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        tf.add(folder, arcname=arcname or folder.name)
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/gzip")


def bad_tgz(name: str, member: str, *, symlink: bool = False) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        info = tarfile.TarInfo(member)
        if symlink:
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tf.addfile(info)
        else:
            info.size = 2
            tf.addfile(info, io.BytesIO(b"{}"))
    return SimpleUploadedFile(name, buffer.getvalue())


def upload(client, token, files, *, run="sweep", step="3", fmt=None, url=URL, capture=None):
    data = {"run": run, "step": step, "file": files}
    if fmt:
        data["format"] = fmt
    headers = {"HTTP_AUTHORIZATION": f"Token {token}"} if token else {}
    if capture is None:
        return client.post(url, data, **headers)
    with capture(execute=True):
        return client.post(url, data, **headers)


@pytest.fixture
def runs(tmp_path):
    return [
        b.mini_run(tmp_path / "run-1", {A: True, B: False}, seed=1),
        b.mini_run(tmp_path / "run-2", {A: False, B: False}, seed=2),
        b.mini_run(tmp_path / "run-3", {A: True, B: None}, seed=3),
    ]


def test_upload_of_three_archives_runs_the_job_and_shows_on_the_run_page(
    client, alice, alice_token, runs, media, django_capture_on_commit_callbacks
):
    files = [tgz(f"{r.name}.tar.gz", r) for r in runs]
    r = upload(client, alice_token, files, capture=django_capture_on_commit_callbacks)
    assert r.status_code == 202, r.content
    assert r["Location"] == f"/api/v1/imports/{r.json()['id']}/" == r.json()["url"]
    # The test's transaction holds the on_commit callback until the request is over; then eager Celery runs it.
    job = client.get(r["Location"], HTTP_AUTHORIZATION=f"Token {alice_token}").json()
    assert job["status"] == "done" and job["progress"] == {"done": 2, "total": 2, "percent": 100}
    assert job["summary"]["groups"] == {"total": 2, "created": 2, "extended": 0, "unchanged": 0, "mixed": 1}
    assert job["summary"]["rollouts"]["unknown"] == 1
    assert job["summary"]["unknown_reward"][0]["ref"] == f"run-3/trajs/{B}/{B}.traj.json"  # as import_runs run-3/ names it
    assert [f["name"] for f in job["uploaded_files"]] == ["run-1.tar.gz", "run-2.tar.gz", "run-3.tar.gz"]
    group = Group.objects.get(uid=f"{A}@3")
    assert (group.n_rollouts, group.is_mixed, group.run.name) == (3, True, "sweep")
    assert not list(media.glob("imports/*"))  # nothing of the upload is kept once the job ended

    listed = client.get(URL, HTTP_AUTHORIZATION=f"Token {alice_token}").json()
    assert [j["id"] for j in listed] == [job["id"]]

    client.force_login(alice)
    html = client.get(reverse("run", args=["acme", "sweep"])).content.decode()
    assert f'data-job="{job["id"]}"' in html and "run-2.tar.gz" in html and "2 groups (1 mixed)" in html
    assert 'hx-trigger="every 2s"' not in html  # nothing running: no polling
    assert '<progress max="100" value="100">' in html

    again = upload(client, alice_token, [tgz(f"{r.name}.tar.gz", r) for r in runs], capture=django_capture_on_commit_callbacks)
    assert ImportJob.objects.get(pk=again.json()["id"]).summary["groups"]["unchanged"] == 2 and Rollout.objects.count() == 6


def test_cli_then_upload_of_the_same_folder_changes_nothing(client, acme, alice_token, runs, django_capture_on_commit_callbacks):
    from django.core.management import call_command

    call_command(
        "import_runs", "--project", "acme", "--run", "sweep", "--step", "3", "--no-progress", str(runs[0]), stdout=io.StringIO()
    )
    r = upload(client, alice_token, [tgz("anything.tar.gz", runs[0])], capture=django_capture_on_commit_callbacks)
    assert ImportJob.objects.get(pk=r.json()["id"]).summary["groups"] == {
        "total": 2,
        "created": 0,
        "extended": 0,
        "unchanged": 2,
        "mixed": 0,
    }


def test_loose_files_and_zip(client, alice_token, tmp_path, django_capture_on_commit_callbacks):
    preds = "\n".join(json.dumps(b.prediction(i, p)) for i, p in ((A, b.patch(1)), (B, ""))) + "\n"
    files = [
        SimpleUploadedFile("preds.jsonl", preds.encode()),
        SimpleUploadedFile("m.run-1.json", json.dumps(b.summary(resolved=[A], empty=[B])).encode()),
    ]
    r = upload(client, alice_token, files, run="preds", step="0", capture=django_capture_on_commit_callbacks)
    assert r.status_code == 202 and ImportJob.objects.get().status == "done", r.content
    assert Rollout.objects.get(group__uid=f"{A}@0").source_ref == f"preds.jsonl#{A}"
    assert Rollout.objects.get(group__uid=f"{B}@0").reward == 0.0
    buffer = io.BytesIO()
    run = b.mini_run(tmp_path / "z", {A: False})
    with zipfile.ZipFile(buffer, "w") as zf:
        for path in run.rglob("*"):
            if path.is_file():
                zf.write(path, path.relative_to(run).as_posix())
    r = upload(
        client,
        alice_token,
        [SimpleUploadedFile("zipped.zip", buffer.getvalue())],
        run="preds",
        step="0",
        fmt="mini-swe-agent",
        capture=django_capture_on_commit_callbacks,
    )
    assert ImportJob.objects.get(pk=r.json()["id"]).summary["groups"]["extended"] == 1
    assert Rollout.objects.get(group__uid=f"{A}@0", index=1).source_ref == f"zipped/trajs/{A}/{A}.traj.json"


def test_a_queued_job_is_polled_every_two_seconds(client, alice, alice_token, runs):
    # No on_commit capture: the task is never sent, as when the worker has not picked it up yet.
    r = upload(client, alice_token, [tgz("run-1.tar.gz", runs[0])])
    assert r.status_code == 202 and r.json()["status"] == "queued"
    client.force_login(alice)
    html = client.get(reverse("run", args=["acme", "sweep"])).content.decode()
    assert 'hx-trigger="every 2s"' in html and 'hx-get="/projects/acme/runs/sweep/imports/jobs/"' in html
    part = client.get("/projects/acme/runs/sweep/imports/jobs/", HTTP_HX_REQUEST="true")
    assert part.status_code == 200 and "<html" not in part.content.decode() and "queued" in part.content.decode()
    assert "HX-Request" in part["Vary"]
    ImportJob.objects.update(status="running", progress_done=1, progress_total=4)
    assert (
        '<progress max="100" value="25">'
        in client.get("/projects/acme/runs/sweep/imports/jobs/", HTTP_HX_REQUEST="true").content.decode()
    )


@pytest.mark.parametrize(
    "bad, message",
    [
        (
            lambda: bad_tgz("evil.tar.gz", "../../outside.json"),
            "archive 'evil.tar.gz' refused: '../../outside.json': path leaves the archive",
        ),
        (lambda: bad_tgz("abs.tar.gz", "/etc/evil.json"), "'/etc/evil.json': absolute path"),
        (lambda: bad_tgz("link.tar.gz", "run/passwd", symlink=True), "'run/passwd': symbolic link"),
    ],
)
def test_unsafe_archives_fail_the_job_naming_the_member_and_leave_nothing(
    client, alice_token, media, bad, message, django_capture_on_commit_callbacks
):
    # Archives are unpacked by the worker, not in the web request: the job fails with the reason.
    r = upload(client, alice_token, [bad()], capture=django_capture_on_commit_callbacks)
    assert r.status_code == 202, r.content
    job = ImportJob.objects.get(pk=r.json()["id"])
    assert job.status == "failed" and message in job.error and str(media) not in job.error
    assert Rollout.objects.count() == 0
    assert not list(media.glob("imports/*")) and not (media.parent / "outside.json").exists()


def test_an_unreadable_archive_is_a_clear_400_and_leaves_nothing(client, alice_token, media):
    r = upload(client, alice_token, [SimpleUploadedFile("broken.tar.gz", b"not gzip at all")])
    assert r.status_code == 400 and "not a readable" in r.json()["detail"]
    assert ImportJob.objects.count() == 0 and Run.objects.count() == 0
    assert not list(media.glob("imports/*/*"))


def test_field_refusals(client, alice_token, runs):
    archive = lambda: tgz("run-1.tar.gz", runs[0])  # noqa: E731
    assert upload(client, alice_token, [archive()], url="/api/v1/imports/").status_code == 400  # no project
    r = upload(client, alice_token, [archive()], step="-1")
    assert r.status_code == 400 and "step" in r.json()["fields"]
    r = upload(client, alice_token, [archive()], fmt="harbor")  # Harbor ATIF is not read yet
    assert r.status_code == 400 and "format" in r.json()["fields"]
    r = client.post(
        URL,
        {"run": "sweep", "step": "3", "reward_threshold": "nan", "file": [archive()]},
        HTTP_AUTHORIZATION=f"Token {alice_token}",
    )
    assert r.status_code == 400 and "reward_threshold" in r.json()["fields"]
    assert upload(client, alice_token, [archive()], run="").status_code == 400
    r = upload(client, alice_token, [])
    assert r.status_code == 400 and "no files" in r.json()["detail"]
    r = upload(client, alice_token, [SimpleUploadedFile("a.json", b"{}"), SimpleUploadedFile("a.json", b"{}")])
    assert r.status_code == 400 and "uploaded twice" in r.json()["detail"]
    assert ImportJob.objects.count() == 0


def test_who_may_import_and_see_jobs(client, alice_token, trainer_token, bob, carol, runs, django_capture_on_commit_callbacks):
    archive = lambda: tgz("run-1.tar.gz", runs[0])  # noqa: E731
    assert upload(client, None, [archive()]).status_code in (401, 403)  # anonymous
    assert upload(client, trainer_token, [archive()]).status_code == 403  # tess may export, not import
    client.force_login(bob)  # bob is a reviewer in acme: may watch, not import
    assert upload(client, None, [archive()]).status_code == 403
    client.logout()
    client.force_login(carol)  # carol is not in acme at all
    assert upload(client, None, [archive()]).status_code == 404
    client.logout()
    job = upload(client, alice_token, [archive()], capture=django_capture_on_commit_callbacks).json()
    client.force_login(carol)
    assert client.get(job["url"]).status_code == 404
    client.logout()
    client.force_login(bob)
    assert client.get(job["url"]).status_code == 200
    assert client.put(job["url"]).status_code == 405
    assert client.delete(URL).status_code == 405
    assert client.get("/api/v1/imports/999999/").status_code == 404
    client.logout()
    assert client.get("/projects/acme/runs/run-1/imports/").status_code == 302  # pages need a login


def test_a_failing_job_is_recorded_not_raised(client, alice_token, runs, media, django_capture_on_commit_callbacks):
    job = upload(client, alice_token, [tgz("run-1.tar.gz", runs[0])]).json()  # queued, not run
    stored = ImportJob.objects.get(pk=job["id"])
    stored.sources = [{"path": "imports/gone", "label": "gone"}, {"path": "imports/gone", "label": "gone"}]
    stored.format = "no-such-format"
    stored.save()
    from grading.ingest.tasks import import_job_task

    assert import_job_task.delay(job_id=stored.pk).get() == "failed"
    stored.refresh_from_db()
    assert stored.status == "failed" and "unknown format" in stored.error and stored.finished_at is not None


def test_two_archives_holding_folders_of_the_same_name(client, alice_token, tmp_path, django_capture_on_commit_callbacks):
    one = b.mini_run(tmp_path / "a" / "run", {A: True}, seed=1)
    two = b.mini_run(tmp_path / "b" / "run", {A: False}, seed=2)
    r = upload(
        client, alice_token, [tgz("seed-1.tar.gz", one), tgz("seed-2.tar.gz", two)], capture=django_capture_on_commit_callbacks
    )
    assert ImportJob.objects.get(pk=r.json()["id"]).summary["skipped"] == []
    refs = list(Rollout.objects.order_by("index").values_list("source_ref", flat=True))
    assert refs == [f"run/trajs/{A}/{A}.traj.json", f"seed-2/run/trajs/{A}/{A}.traj.json"]
