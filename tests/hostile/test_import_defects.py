"""Import defects found by the security review, one test (or more) each.

3. text patterns with super-linear worst cases (`<pr_description>` + N spaces took O(N^4));
4. a huge JSON file read as several copies, and a poisoned message redelivered forever;
5. a job left `running` when saving its result failed; non-UTF-8 member names;
6. member and size limits per archive instead of per upload, unpacking in the web request,
   temporary files left behind.

The speed of the patterns is measured by benchmarks/importer_regex.py (time vs N, old and
new); here the pathological inputs are checked for the right answer, under a watchdog so a
regression fails instead of hanging the suite.
"""

from __future__ import annotations

import io
import json
import signal
import tarfile
import tracemalloc
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from grading.ingest.importers import archives, mini_swe_agent
from grading.ingest.importers.common import MAX_JSON_BYTES, MB, SourceError, load_json, problem_statement_of, repo_of
from grading.ingest.importers.scan import Source
from grading.ingest.imports.jobs import MAX_ATTEMPTS, create_import_job
from grading.ingest.imports.runs import ImportSummary, import_runs
from grading.ingest.imports.uploads import store_upload
from grading.models import Group, ImportJob, Project, Rollout
from tests.helpers import import_files as b
from tests.hostile.corpus import record

A, B = "octo__widgets-101", "octo__widgets-102"
URL = "/api/v1/imports/?project=acme"


@contextmanager
def watchdog(seconds: int):
    """Fail (not hang) when the block runs far longer than a linear parse could: a generous bound."""

    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: super-linear again?")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def tgz(name: str, folder, *, arcname: str | None = None) -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        tf.add(folder, arcname=arcname or folder.name)
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/gzip")


def members_of(upload: SimpleUploadedFile) -> int:
    with tarfile.open(fileobj=io.BytesIO(upload.read()), mode="r:gz") as tf:
        count = len(tf.getmembers())
    upload.seek(0)
    return count


def post(client, token, files, capture=None):
    data = {"run": "sweep", "step": "3", "file": files}
    if capture is None:
        return client.post(URL, data, HTTP_AUTHORIZATION=f"Token {token}")
    with capture(execute=True):
        return client.post(URL, data, HTTP_AUTHORIZATION=f"Token {token}")


# -- 3. linear text patterns ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "text", "expected"),
    [
        ("<pr_description> + 1,000,000 spaces, no closing tag", "<pr_description>" + " " * 1_000_000, ""),
        (
            "<pr_description> + 1,000,000 spaces, then closed",
            "<pr_description>" + " " * 1_000_000 + "fix\n</pr_description>",
            "fix",
        ),
        (
            "preamble + 1,000,000 newlines, no closing tag",
            "<pr_description>Consider the following PR description:" + "\n" * 1_000_000,
            "",
        ),
    ],
)
def test_pr_description_on_pathological_text(case, text, expected):
    with watchdog(60):  # linear: well under a second; the old pattern needed hours past N = 1,000
        got = problem_statement_of(text)
    record("agent-run import", f"problem statement: {case}", "refused" if got == expected else "FAILED")
    assert got == expected


def test_pr_description_keeps_its_meaning():
    prompt = (
        "<pr_description>\nConsider the following PR description:\n  Widgets break.\n</pr_description>\n"
        "<pr_description>x</pr_description>"
    )
    assert problem_statement_of(prompt) == "Widgets break."
    assert problem_statement_of("no tags") == problem_statement_of("<pr_description>open") == ""


def test_fenced_action_and_repo_on_pathological_text():
    with watchdog(60):
        action = mini_swe_agent._message({"role": "assistant", "content": "```bash" + "\n" * 1_000_000})
        closed = mini_swe_agent._message({"role": "assistant", "content": "```bash  \n\n  ls -la\n```"})
        repo = repo_of("_" * 1_000_000)
    ok = "action" not in action and closed["action"] == "ls -la" and repo == ""
    assert repo_of("scikit-learn__scikit-learn-14141") == "scikit-learn/scikit-learn" and repo_of("a___b-1") == "a/_b"
    record(
        "agent-run import", "fenced bash + 1,000,000 newlines; 1,000,000-underscore instance id", "refused" if ok else "FAILED"
    )
    assert ok


# -- 4. bounded reading, no redelivery loop ---------------------------------------------------


@pytest.mark.django_db
def test_a_json_file_over_the_limit_is_skipped_and_named(tmp_path):
    project = Project.objects.create(name="acme")
    root = b.mini_run(tmp_path / "run-1", {A: True, B: False}, seed=1)
    big = next(root.glob(f"**/{B}.traj.json"))
    with big.open("r+b") as handle:  # sparse: 300 MB on paper, nothing on disk
        handle.truncate(300 * MB)
    summary = import_runs(project=project, run="r1", step=1, sources=[Source(root)])
    reasons = {f.ref: f.reason for f in summary.findings}
    expected = f"{B}.traj.json is 300 MB, over the {MAX_JSON_BYTES // MB} MB limit"
    ok = reasons.get(f"run-1/trajs/{B}/{B}.traj.json") == expected and Group.objects.filter(uid=f"{A}@1").exists()
    record("agent-run import", "300 MB trajectory", "refused" if ok else "FAILED")
    assert ok, reasons


def test_a_json_file_over_the_limit_is_not_read(tmp_path):
    """The size is checked before a byte is read: refusing a 1 GiB file costs nothing (it cost
    the file three times over: read, stripped copy, parse)."""
    path = tmp_path / "huge.traj.json"
    with path.open("wb") as handle:
        handle.truncate(1024 * MB)
    tracemalloc.start()
    try:
        with pytest.raises(SourceError, match=rf"huge\.traj\.json is 1,024 MB, over the {MAX_JSON_BYTES // MB} MB limit"):
            load_json(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MB
    small = tmp_path / "small.json"
    small.write_bytes(b"\n[1, 2, 3]\n")
    assert load_json(small) == [1, 2, 3]
    with pytest.raises(SourceError, match=r"small\.json is 0 MB, over the 0 MB limit"):
        load_json(small, limit=5)
    small.write_bytes(b" \n\t ")
    with pytest.raises(SourceError, match="empty file"):
        load_json(small)


@pytest.mark.django_db
def test_a_job_killed_every_time_fails_after_its_attempts(acme, alice, media, tmp_path):
    """A worker killed while importing (out of memory) leaves the job running and the message is
    delivered again; each delivery counts, and past MAX_ATTEMPTS the job fails instead of running."""
    from grading.ingest.tasks import import_job_task

    folder, sources, uploaded = store_upload(project=acme, files=[tgz("run-1.tar.gz", b.mini_run(tmp_path / "run-1", {A: True}))])
    job = create_import_job(project=acme, user=alice, run="sweep", step=3, fmt="auto", sources=sources, uploaded=uploaded)
    ImportJob.objects.filter(pk=job.pk).update(status="running", attempts=MAX_ATTEMPTS)  # three deliveries, each killed
    assert import_job_task.delay(job_id=job.pk).get() == "failed"
    job.refresh_from_db()
    ok = (
        job.status == "failed"
        and f"after {MAX_ATTEMPTS} attempts" in job.error
        and job.finished_at is not None
        and Rollout.objects.count() == 0
        and not (media / folder).exists()
    )
    record("agent-run import", "message redelivered after the worker was killed", "refused" if ok else "FAILED")
    assert ok, job.error
    assert import_job_task.delay(job_id=job.pk).get() == "failed"  # a failed job is not run again
    assert ImportJob.objects.get(pk=job.pk).attempts == MAX_ATTEMPTS + 1


@pytest.mark.django_db
def test_each_delivery_counts_one_attempt(acme, alice, media, tmp_path):
    from grading.ingest.tasks import import_job_task

    _, sources, uploaded = store_upload(project=acme, files=[tgz("run-1.tar.gz", b.mini_run(tmp_path / "run-1", {A: True}))])
    job = create_import_job(project=acme, user=alice, run="sweep", step=3, fmt="auto", sources=sources, uploaded=uploaded)
    ImportJob.objects.filter(pk=job.pk).update(status="running", attempts=1)  # the first delivery was killed mid-unpack
    assert import_job_task.delay(job_id=job.pk).get() == "done"
    assert ImportJob.objects.get(pk=job.pk).attempts == 2 and Group.objects.filter(uid=f"{A}@3").exists()


# -- 5. never left running; non-UTF-8 names ---------------------------------------------------


@pytest.mark.django_db
def test_a_job_whose_summary_cannot_be_saved_fails_with_the_error(acme, alice, media, tmp_path, monkeypatch):
    from grading.ingest.tasks import import_job_task

    _, sources, uploaded = store_upload(project=acme, files=[tgz("run-1.tar.gz", b.mini_run(tmp_path / "run-1", {A: True}))])
    job = create_import_job(project=acme, user=alice, run="sweep", step=3, fmt="auto", sources=sources, uploaded=uploaded)

    def broken(self):
        raise ValueError("summary refused by the database")

    monkeypatch.setattr(ImportSummary, "as_dict", broken)
    result = import_job_task.delay(job_id=job.pk).get()
    job.refresh_from_db()
    ok = result == "failed" and job.status == "failed" and "summary refused by the database" in job.error and job.finished_at
    record("agent-run import", "saving the job's summary fails", "refused" if ok else "FAILED")
    assert ok, (job.status, job.error)


def non_utf8_archive(tmp_path) -> SimpleUploadedFile:
    """run-1/ with instance A, and a trajectory whose folder and file names hold the byte 0xff."""
    root = b.mini_run(tmp_path / "run-1", {A: True, B: False}, seed=1)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape") as tf:
        tf.add(root, arcname="run-1")
        raw = (root / "trajs" / B / f"{B}.traj.json").read_bytes()
        info = tarfile.TarInfo("run-1/trajs/bad\udcff-1/bad\udcff-1.traj.json")  # the raw byte, as os.fsdecode gives it
        info.size = len(raw)
        tf.addfile(info, io.BytesIO(raw))
    return SimpleUploadedFile("run-1.tar.gz", buffer.getvalue())


@pytest.mark.django_db
def test_a_non_utf8_member_name_costs_only_its_file(
    client, acme, alice_token, media, tmp_path, django_capture_on_commit_callbacks
):
    r = post(client, alice_token, [non_utf8_archive(tmp_path)], capture=django_capture_on_commit_callbacks)
    job = ImportJob.objects.get(pk=r.json()["id"])
    skipped = {s["ref"]: s["reason"] for s in job.summary.get("skipped", [])}
    ok = (
        job.status == "done"
        and Group.objects.filter(uid__in=[f"{A}@3", f"{B}@3"]).count() == 2
        and "not valid UTF-8" in skipped.get("run-1/trajs/bad\\xff-1/bad\\xff-1.traj.json", "")
    )
    json.dumps(job.summary, ensure_ascii=False).encode("utf-8")  # no lone surrogate anywhere (PostgreSQL would refuse it)
    record("agent-run import", "archive member with a non-UTF-8 name", "refused" if ok else "FAILED")
    assert ok, (job.status, job.error, skipped)


# -- 6. budgets per upload, unpacked in the worker, nothing left behind -----------------------


@pytest.mark.django_db
def test_the_web_request_stores_the_upload_and_the_worker_unpacks_it(client, acme, alice_token, media, tmp_path):
    from grading.ingest.tasks import import_job_task

    r = post(client, alice_token, [tgz("run-1.tar.gz", b.mini_run(tmp_path / "run-1", {A: True}))])  # not run: queued
    assert r.status_code == 202 and r.json()["status"] == "queued"
    stored = sorted(p.relative_to(media).as_posix().split("/", 2)[2] for p in media.glob("imports/*/**/*") if p.is_file())
    ok = stored == ["uploads/run-1.tar.gz"]
    record("agent-run import", "upload unpacked in the web request", "refused" if ok else "FAILED")
    assert ok, stored
    assert import_job_task.delay(job_id=r.json()["id"]).get() == "done"
    assert Group.objects.filter(uid=f"{A}@3").exists() and not list(media.glob("imports/*"))  # nothing kept once done


@pytest.mark.parametrize("limit", ["members", "bytes"])
@pytest.mark.django_db
def test_budgets_hold_for_the_whole_upload(
    client, acme, alice_token, media, tmp_path, monkeypatch, limit, django_capture_on_commit_callbacks
):
    one = tgz("seed-1.tar.gz", b.mini_run(tmp_path / "a" / "run", {A: True, B: False}, seed=1))
    two = tgz("seed-2.tar.gz", b.mini_run(tmp_path / "b" / "run", {A: False, B: True}, seed=2))
    if limit == "members":
        monkeypatch.setattr(archives, "MAX_MEMBERS", max(members_of(one), members_of(two)) + 1)  # each fits, not both
    else:
        sizes = [sum(p.stat().st_size for p in (tmp_path / d).rglob("*") if p.is_file()) for d in "ab"]
        monkeypatch.setattr(archives, "MAX_BYTES", max(sizes) + 1)
    r = post(client, alice_token, [one, two], capture=django_capture_on_commit_callbacks)
    job = ImportJob.objects.get(pk=r.json()["id"])
    ok = (
        job.status == "failed"
        and "archive 'seed-2.tar.gz' refused" in job.error
        and "upload together" in job.error
        and Rollout.objects.count() == 0
        and not list(media.glob("imports/*"))
    )
    record("agent-run import", f"two archives, each within the {limit} limit, together over it", "refused" if ok else "FAILED")
    assert ok, (job.status, job.error)


@pytest.mark.django_db
def test_no_files_are_left_when_the_import_raises(
    client, acme, alice_token, media, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    import grading.ingest.imports.jobs as imports

    def crash(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(imports, "import_runs", crash)
    r = post(
        client,
        alice_token,
        [tgz("run-1.tar.gz", b.mini_run(tmp_path / "run-1", {A: True}))],
        capture=django_capture_on_commit_callbacks,
    )
    job = ImportJob.objects.get(pk=r.json()["id"])
    ok = job.status == "failed" and "database went away" in job.error and not list(media.glob("imports/*"))
    record("agent-run import", "import raises after unpacking", "refused" if ok else "FAILED")
    assert ok, (job.status, job.error, list(media.rglob("*")))


# -- 10 (low). no absolute server paths in what an import reports -------------------------------


def member_under_a_file(name: str) -> SimpleUploadedFile:
    """`run/a` is a file and `run/a/b/c.json` a file under it: writing the second fails with an
    OSError (ENOTDIR) whose text names the absolute path it was written to."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for member in ("run/a", "run/a/b/c.json"):
            info = tarfile.TarInfo(member)
            info.size = 2
            tf.addfile(info, io.BytesIO(b"{}"))
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/gzip")


def test_an_archive_that_cannot_be_written_names_no_absolute_path(tmp_path):
    packed = tmp_path / "run-1.tar.gz"
    packed.write_bytes(member_under_a_file("run-1.tar.gz").read())
    with pytest.raises(archives.UnsafeArchive) as refused:
        archives.extract_archive(packed, tmp_path / "out")
    assert str(refused.value) == "could not be read: Not a directory"
    assert not (tmp_path / "out").exists()


@pytest.mark.django_db
def test_a_failed_unpack_shows_the_archives_name_and_the_error_only(
    client, acme, alice_token, media, tmp_path, django_capture_on_commit_callbacks
):
    r = post(client, alice_token, [member_under_a_file("run-1.tar.gz")], capture=django_capture_on_commit_callbacks)
    assert r.status_code == 202
    job = ImportJob.objects.get(pk=r.json()["id"])
    ok = (
        job.status == "failed"
        and job.error == "archive 'run-1.tar.gz' refused: could not be read: Not a directory"
        and str(media) not in job.error
        and str(tmp_path) not in job.error
    )
    record("agent-run import", "archive refusal from an OSError (absolute media path)", "refused" if ok else "FAILED")
    assert ok, job.error


@pytest.mark.django_db
def test_a_missing_path_is_named_relative_to_the_upload(acme, alice, media, tmp_path):
    from grading.ingest.tasks import import_job_task

    files = [
        SimpleUploadedFile(
            f"{A}.traj.json", (b.mini_run(tmp_path / "run-1", {A: True}) / "trajs" / A / f"{A}.traj.json").read_bytes()
        )
    ]
    folder, sources, uploaded = store_upload(project=acme, files=files)
    job = create_import_job(project=acme, user=alice, run="sweep", step=3, fmt="auto", sources=sources, uploaded=uploaded)
    for path in (media / folder / "files").iterdir():  # the upload's files went away before the worker ran
        path.unlink()
    (media / folder / "files").rmdir()
    assert import_job_task.delay(job_id=job.pk).get() == "failed"  # it stored nothing, so it is not "done"
    job.refresh_from_db()
    skipped = job.summary.get("skipped", [])
    ok = (
        {"ref": "files", "reason": "no such file or folder"} in skipped
        and str(media) not in json.dumps(job.summary)
        and job.error == "nothing imported: 1 file(s) refused (files: no such file or folder)"
    )
    record("agent-run import", "a PATH gone before the worker ran (absolute media path)", "refused" if ok else "FAILED")
    assert ok, skipped


@pytest.mark.django_db
def test_a_missing_path_on_the_command_line_is_named_as_given(acme, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    summary = import_runs(project=acme, run="r1", step=1, sources=[Source(Path("runs/gone"))])
    assert [(f.ref, f.reason) for f in summary.findings] == [("runs/gone", "no such file or folder")]
    assert Source(tmp_path / "x", shown="x").name == "x" and Source(Path("a/b")).name == "a/b"


def test_a_named_pipe_among_the_files_is_skipped_not_read_forever(acme, tmp_path):
    """A named pipe called like a trajectory (an archive may hold one) blocked the import, and
    manage.py scan, on its first read; it is now listed as not a regular file."""
    import os

    root = b.mini_run(tmp_path / "run-1", {A: True, B: False}, seed=1)
    os.mkfifo(root / "trajs" / "stalled.traj.json")
    with watchdog(60):
        summary = import_runs(project=acme, run="r1", step=1, sources=[Source(str(root), "run-1")])
    assert summary.groups_created == 2
    assert any("stalled.traj.json" in f.ref and "not a regular file" in f.reason for f in summary.findings)
