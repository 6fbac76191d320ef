"""The import page /projects/<p>/runs/<r>/imports/: admins upload (same job, limits and refusals
as the API), others are refused."""

from __future__ import annotations

import io
import shutil
import tarfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from grading.models import Group, ImportJob, Run
from tests.helpers.groups import jsonl, small_group
from tests.helpers.vendored import FIXTURES

pytestmark = pytest.mark.django_db

OPENHANDS = FIXTURES / "openhands-multi-swe-bench"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def sweep(acme):
    return Run.objects.create(project=acme, name="sweep")


def page(run="sweep") -> str:
    return reverse("import-page", args=["acme", run])


def openhands_tgz(tmp_path, name="oh-run.tar.gz") -> SimpleUploadedFile:
    folder = tmp_path / "oh-run"
    folder.mkdir(exist_ok=True)
    shutil.copy(OPENHANDS / "output.jsonl", folder / "output.jsonl")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        tf.add(folder, arcname="oh-run")
    return SimpleUploadedFile(name, buffer.getvalue(), content_type="application/gzip")


def test_admin_uploads_an_archive_and_sees_the_finished_job(client, alice, sweep, tmp_path, django_capture_on_commit_callbacks):
    client.force_login(alice)
    html = client.get(page()).content.decode()
    assert (
        'type="file" name="file" multiple' in html and "OpenHands output.jsonl" in html and "No imports into this run yet" in html
    )
    with django_capture_on_commit_callbacks(execute=True):
        r = client.post(page(), {"format": "auto", "step": "2", "reward_threshold": "", "file": [openhands_tgz(tmp_path)]})
    assert r.status_code == 302 and r["Location"] == page()
    job = ImportJob.objects.get()
    assert (job.status, job.step, job.format, job.reward_threshold, job.created_by) == ("done", 2, "auto", None, alice)
    html = client.get(r["Location"]).content.decode()
    assert f"Import #{job.pk} queued" in html
    assert f'data-job="{job.pk}" data-status="done"' in html and "3 groups (0 mixed)" in html and "3 reward unknown" in html
    assert "oh-run.tar.gz" in html
    assert sorted(Group.objects.values_list("uid", flat=True)) == [
        "ponylang__ponyc-4588@2",
        "ponylang__ponyc-4593@2",
        "ponylang__ponyc-4595@2",
    ]
    run_html = client.get(reverse("run", args=["acme", "sweep"])).content.decode()
    assert f'href="{page()}"' in run_html  # the run page links admins to it


def test_the_same_refusals_as_the_api_shown_on_the_page(client, alice, sweep, tmp_path):
    client.force_login(alice)
    r = client.post(page(), {"format": "auto", "step": "-1", "file": [openhands_tgz(tmp_path)]})
    assert r.status_code == 400 and "step: Ensure this value is greater than or equal to 0." in r.content.decode()
    r = client.post(page(), {"format": "harbor", "step": "1", "file": [openhands_tgz(tmp_path)]})
    assert r.status_code == 400 and "format:" in r.content.decode()
    r = client.post(page(), {"format": "verl", "step": "1", "reward_threshold": "nan", "file": [openhands_tgz(tmp_path)]})
    assert r.status_code == 400 and "reward threshold:" in r.content.decode()
    r = client.post(page(), {"format": "auto", "step": "1"})
    assert r.status_code == 400 and "no files" in r.content.decode()
    r = client.post(page(), {"format": "auto", "step": "1", "file": [SimpleUploadedFile("x.tar.gz", b"not an archive")]})
    body = r.content.decode()
    assert r.status_code == 400 and "archive &#x27;x.tar.gz&#x27; refused" in body
    assert 'value="1"' in body  # the form keeps what was typed
    assert ImportJob.objects.count() == 0


def test_an_unsafe_archive_fails_its_job_with_the_reason(client, alice, sweep, django_capture_on_commit_callbacks):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        info = tarfile.TarInfo("../escape.json")
        info.size = 2
        tf.addfile(info, io.BytesIO(b"{}"))
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(page(), {"step": "1", "file": [SimpleUploadedFile("evil.tar.gz", buffer.getvalue())]})
    job = ImportJob.objects.get()
    assert job.status == "failed" and "path leaves the archive" in job.error
    html = client.get(page()).content.decode()
    assert 'data-status="failed"' in html and "path leaves the archive" in html


def test_reviewer_gets_a_styled_403_and_no_link(client, bob, sweep, tmp_path):
    client.force_login(bob)
    r = client.get(page())
    assert r.status_code == 403
    body = r.content.decode()
    # the site's 403 page: the role, and the way back to the project; no upload form
    assert "Your role (reviewer) in acme does not allow this" in body and 'data-testid="back-to-project"' in body
    assert 'class="import-form"' not in body
    assert client.post(page(), {"step": "1", "file": [openhands_tgz(tmp_path)]}).status_code == 403
    assert ImportJob.objects.count() == 0
    assert 'data-testid="import-link"' not in client.get(reverse("run", args=["acme", "sweep"])).content.decode()


def test_outsiders_and_unknown_runs_get_404(client, carol, alice, sweep):
    client.force_login(carol)
    assert client.get(page()).status_code == 404
    client.force_login(alice)
    assert client.get(page("nope")).status_code == 404


def test_the_job_list_polls_while_a_job_is_active(client, alice, acme, sweep):
    ImportJob.objects.create(project=acme, run=sweep, step=1, created_by=alice)
    client.force_login(alice)
    html = client.get(page()).content.decode()
    assert f'hx-get="{reverse("run-imports", args=["acme", "sweep"])}" hx-trigger="every 2s"' in html
    partial = client.get(reverse("run-imports", args=["acme", "sweep"]), HTTP_HX_REQUEST="true").content.decode()
    assert 'data-status="queued"' in partial and "<html" not in partial


def test_group_lines_import_and_what_was_not_imported_is_shown_in_red(client, alice, sweep, django_capture_on_commit_callbacks):
    body = jsonl(small_group("t-1@4", run="sweep", step=4), small_group("t-2@4", run="elsewhere", step=4, instance_id="t-2"))
    client.force_login(alice)
    assert "gagar-group/1 group lines" in client.get(page()).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(page(), {"step": "0", "file": [SimpleUploadedFile("step-4.jsonl", body)]})
    job = ImportJob.objects.get()
    assert job.status == "done" and [w["ref"] for w in job.warnings] == ["t-2@4"]
    html = client.get(page()).content.decode()
    assert f'data-job="{job.pk}" data-status="done"' in html and "1 groups (1 mixed)" in html
    assert 'data-testid="import-warning-count">1 not imported</span>' in html
    assert 'class="import-problems compact" data-testid="import-warnings"' in html
    assert (
        "not imported <code>t-2@4</code>: step-4.jsonl line 2: run: &#x27;elsewhere&#x27;, but this import goes into run" in html
    )


def test_an_import_that_stored_nothing_is_failed_in_red(client, alice, sweep, django_capture_on_commit_callbacks):
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(page(), {"step": "0", "file": [SimpleUploadedFile("notes.txt", b"x")]})
    job = ImportJob.objects.get()
    assert job.status == "failed" and job.error.startswith("nothing imported: 1 file(s) not read (notes.txt: unrelated file")
    html = client.get(page()).content.decode()
    assert f'data-job="{job.pk}" data-status="failed"' in html and '<span class="badge fail">failed</span>' in html
    assert '<p class="import-problems" data-testid="import-error">nothing imported: 1 file(s) not read' in html
    assert Group.objects.count() == 0
