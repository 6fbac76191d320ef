"""What an import says happened: gagar-group/1 files through POST /api/v1/imports/ and import_runs,
jobs that stored nothing fail, jobs that refused something carry `warnings`, commands exit non-zero.

alice is an admin of acme (she imports); the run is `sweep`.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from grading.models import Group, ImportJob, Rollout
from tests.helpers.groups import jsonl, small_group

pytestmark = pytest.mark.django_db

URL = "/api/v1/imports/?project=acme"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def upload(client, token, files, capture, *, run="sweep", step="3", fmt=None):
    data = {"run": run, "step": step, "file": files}
    if fmt:
        data["format"] = fmt
    with capture(execute=True):
        r = client.post(URL, data, HTTP_AUTHORIZATION=f"Token {token}")
    assert r.status_code == 202, r.content
    return client.get(r["Location"], HTTP_AUTHORIZATION=f"Token {token}").json()


def step_lines(*uids, run="sweep", step=7) -> bytes:
    return jsonl(*(small_group(uid, run=run, step=step, instance_id=uid.split("@")[0]) for uid in uids))


def test_group_lines_upload_is_stored_at_their_own_step(client, alice_token, django_capture_on_commit_callbacks):
    # The file the issue found mis-detected as SWE-bench predictions ("0 groups · 1 skipped", done).
    files = [SimpleUploadedFile("step-7.jsonl", step_lines("t-1@7", "t-2@7"))]
    job = upload(client, alice_token, files, django_capture_on_commit_callbacks)
    assert (job["status"], job["warnings"], job["error"]) == ("done", [], "")
    assert job["summary"]["groups"] == {"total": 2, "created": 2, "extended": 0, "unchanged": 0, "mixed": 2}
    assert job["summary"]["rollouts"]["passed"] == 4 and job["summary"]["rollouts"]["failed"] == 2
    assert job["progress"] == {"done": 2, "total": 2, "percent": 100}
    assert sorted(Group.objects.values_list("uid", "step__number", "run__name")) == [("t-1@7", 7, "sweep"), ("t-2@7", 7, "sweep")]
    again = upload(
        client,
        alice_token,
        [SimpleUploadedFile("step-7.jsonl", step_lines("t-1@7", "t-2@7"))],
        django_capture_on_commit_callbacks,
    )
    assert again["status"] == "done" and again["summary"]["groups"]["unchanged"] == 2 and Rollout.objects.count() == 6


def test_an_archive_of_gzipped_group_lines_and_a_forced_format(client, alice_token, django_capture_on_commit_callbacks):
    buffer = io.BytesIO()
    body = gzip.compress(step_lines("t-1@7", "t-2@7", "t-3@7"))
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        info = tarfile.TarInfo("dump/step-7.jsonl.gz")
        info.size = len(body)
        tf.addfile(info, io.BytesIO(body))
    job = upload(
        client,
        alice_token,
        [SimpleUploadedFile("dump.tar.gz", buffer.getvalue())],
        django_capture_on_commit_callbacks,
        fmt="gagar-group",
    )
    assert job["status"] == "done" and job["warnings"] == [] and job["summary"]["groups"]["created"] == 3
    assert Group.objects.filter(step__number=7).count() == 3


def test_lines_of_another_run_are_refused_by_line_and_field_the_rest_kept(
    client, alice_token, django_capture_on_commit_callbacks
):
    body = step_lines("t-1@7") + step_lines("t-2@7", run="flash-code-rl") + b'{"format": "gagar-group/1", "run": "sweep"}\n'
    job = upload(client, alice_token, [SimpleUploadedFile("mixed.jsonl", body)], django_capture_on_commit_callbacks)
    assert job["status"] == "done" and job["summary"]["groups"]["created"] == 1
    reasons = {w["ref"]: w["reason"] for w in job["warnings"]}
    assert reasons["t-2@7"].startswith("mixed.jsonl line 2: run: 'flash-code-rl', but this import goes into run 'sweep'")
    assert reasons["mixed.jsonl line 3"].startswith("mixed.jsonl line 3: step: required")
    assert job["summary"]["warnings_count"] == 2
    assert list(Group.objects.values_list("uid", flat=True)) == ["t-1@7"]


def test_a_job_that_stores_nothing_fails_saying_why(client, alice_token, django_capture_on_commit_callbacks):
    # notes.txt is no file to import and the trajectory is broken: nothing stored, so not "done"
    files = [SimpleUploadedFile("notes.txt", b"remember\n"), SimpleUploadedFile("x__y-1.traj.json", b'{"messages": [')]
    job = upload(client, alice_token, files, django_capture_on_commit_callbacks)
    assert job["status"] == "failed"
    assert job["error"].startswith("nothing imported: 1 file(s) refused (x__y-1.traj.json: truncated or invalid JSON")
    assert "1 file(s) not read (notes.txt: unrelated file" in job["error"]
    assert [w["ref"] for w in job["warnings"]] == ["x__y-1.traj.json"]
    assert Group.objects.count() == 0 and ImportJob.objects.get().status == "failed"


def test_a_job_of_only_refused_group_lines_fails(client, alice_token, django_capture_on_commit_callbacks):
    job = upload(
        client,
        alice_token,
        [SimpleUploadedFile("other.jsonl", step_lines("t-1@7", run="other"))],
        django_capture_on_commit_callbacks,
    )
    assert job["status"] == "failed" and job["error"].startswith(
        "nothing imported: 1 group(s) refused (t-1@7: other.jsonl line 1: run:"
    )
    assert Group.objects.count() == 0


def test_a_json_group_and_a_compressed_foreign_file_are_refused_by_name(client, alice_token, django_capture_on_commit_callbacks):
    files = [
        SimpleUploadedFile("one.json", jsonl(small_group("t-1@7", run="sweep"))),
        SimpleUploadedFile("preds.jsonl.gz", gzip.compress(b'{"instance_id": "a__b-1", "model_patch": ""}\n')),
    ]
    job = upload(client, alice_token, files, django_capture_on_commit_callbacks)
    reasons = {w["ref"]: w["reason"] for w in job["warnings"]}
    assert job["status"] == "failed"
    assert "group lines are read from .jsonl (or .jsonl.gz)" in reasons["one.json"]
    assert "only those are read compressed" in reasons["preds.jsonl.gz"]


def run_command(*args) -> tuple[str, str]:
    """(output, the CommandError's message or '' when it exited 0)."""
    out = StringIO()
    try:
        call_command(*map(str, args), "--project", "acme", "--no-progress", stdout=out, stderr=StringIO())
    except CommandError as exc:
        return out.getvalue(), str(exc)
    return out.getvalue(), ""


def test_import_runs_reads_group_lines_and_exits_non_zero_saying_which(acme, tmp_path):
    good = tmp_path / "step-7.jsonl"
    good.write_bytes(step_lines("t-1@7"))
    out, error = run_command("import_runs", "--run", "sweep", "--step", 0, good)
    assert error == "" and "groups: 1 (1 created" in out and Group.objects.get().step.number == 7
    other = tmp_path / "other.jsonl"
    other.write_bytes(step_lines("t-9@7", run="other"))
    out, error = run_command("import_runs", "--run", "sweep", "--step", 0, good, other)
    assert error == (
        "1 group(s) imported, but 1 file(s), attempt(s) or group(s) were refused (listed above under skipped and refused groups)"
    )
    assert "t-9@7: other.jsonl line 1: run: 'other', but this import goes into run 'sweep'" in out
    out, error = run_command("import_runs", "--run", "sweep", "--step", 0, other)
    assert error.startswith("nothing imported: 1 group(s) refused (t-9@7: other.jsonl line 1: run:")
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    out, error = run_command("import_runs", "--run", "sweep", "--step", 0, notes)
    assert error.startswith("nothing imported: 1 file(s) not read (notes.txt: unrelated file")


def test_import_groups_exits_non_zero_when_nothing_was_imported(acme, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n")
    out, error = run_command("import_groups", empty)
    assert error.startswith("nothing imported: no line of the file was accepted") and "empty.jsonl: 0 lines" in out
    foreign = tmp_path / "x__y-1.traj.json"
    foreign.write_bytes(b'{"messages": [], "info": {}}\n')
    out, error = run_command("import_groups", foreign)
    assert "agent runs and SWE-bench files go through import_runs" in error and "line 1: format: required" in out
    good = tmp_path / "good.jsonl"
    good.write_bytes(step_lines("t-1@7"))
    out, error = run_command("import_groups", good, foreign)
    assert error == "1 group(s) imported, but some lines or files were refused (see above)"
    assert Group.objects.count() == 1
