"""The import page in real Chromium: an admin uploads an archive and sees the job finish; a reviewer is refused.

Celery is eager (tests/conftest.py), so the job runs when the upload's transaction commits;
the test waits for the job row's `data-status="done"` marker, never for time.
"""

from __future__ import annotations

import shutil
import tarfile

import pytest
from playwright.sync_api import expect

from grading.models import Group, ImportJob, Run
from tests.helpers.groups import jsonl, small_group
from tests.helpers.vendored import FIXTURES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGE = "/projects/acme/runs/sweep/imports/"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def sweep(acme):
    return Run.objects.create(project=acme, name="sweep")


def log_in(page, live_server, username: str, next_path: str) -> None:
    page.goto(f"{live_server.url}{next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"{username}-pass-123")
    page.get_by_role("button", name="Log in").click()


def test_admin_uploads_an_archive_and_sees_the_job_finish(live_server, page, alice, sweep, tmp_path):
    folder = tmp_path / "oh-run"
    folder.mkdir()
    shutil.copy(FIXTURES / "openhands-multi-swe-bench" / "output.jsonl", folder / "output.jsonl")
    archive = tmp_path / "oh-run.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(folder, arcname="oh-run")

    log_in(page, live_server, "alice", "/projects/acme/runs/sweep/")
    page.get_by_test_id("import-link").click()
    expect(page.get_by_role("heading", name="Import into run sweep")).to_be_visible()
    expect(page.get_by_test_id("no-imports")).to_be_visible()
    page.set_input_files("#import-files", str(archive))
    page.get_by_label("Format").select_option("openhands")
    page.get_by_label("Step").fill("5")
    page.get_by_role("button", name="Import").click()

    job = page.locator("#import-jobs tr[data-status]")
    page.wait_for_selector('#import-jobs tr[data-status="done"]', state="attached")
    expect(job).to_have_count(1)
    expect(job).to_contain_text("oh-run.tar.gz")
    expect(job).to_contain_text("3 groups (0 mixed)")
    expect(job).to_contain_text("3 rollouts (3 reward unknown)")
    expect(page.locator(".flash")).to_contain_text("queued")
    assert ImportJob.objects.get().format == "openhands"
    assert Group.objects.filter(step__number=5).count() == 3
    job.get_by_text("details").click()
    expect(job.locator("details")).to_contain_text("no test_result.report in the output line")
    assert page.console_log.errors == []


def test_a_reviewer_gets_a_page_saying_why_not(live_server, page, bob, sweep):
    log_in(page, live_server, "bob", "/projects/acme/runs/sweep/")
    expect(page.get_by_role("heading", name="Run sweep")).to_be_visible()
    expect(page.get_by_test_id("import-link")).to_have_count(0)
    response = page.goto(f"{live_server.url}{PAGE}")
    assert response.status == 403
    expect(page.locator("main")).to_contain_text("Your role (reviewer) in acme does not allow this")
    expect(page.get_by_test_id("back-to-project")).to_be_visible()
    expect(page.locator("form.import-form")).to_have_count(0)
    expect(page.locator("header.topbar")).to_be_visible()  # the site's layout, not a bare error
    assert ImportJob.objects.count() == 0


def test_an_import_that_stores_nothing_turns_red_and_says_why(live_server, page, alice, sweep, tmp_path):
    other_run = tmp_path / "step-3.jsonl"
    other_run.write_bytes(jsonl(small_group("t-1@3", run="flash-code-rl", step=3)))

    log_in(page, live_server, "alice", PAGE)
    page.set_input_files("#import-files", str(other_run))
    page.get_by_label("Step").fill("3")
    page.get_by_role("button", name="Import").click()

    page.wait_for_selector('#import-jobs tr[data-status="failed"]', state="attached")
    job = page.locator('#import-jobs tr[data-status="failed"]')
    expect(job.locator(".badge.fail")).to_have_text("failed")
    error = job.get_by_test_id("import-error")
    expect(error).to_contain_text("nothing imported: 1 group(s) refused")
    expect(error).to_contain_text("step-3.jsonl line 1: run: 'flash-code-rl', but this import goes into run 'sweep'")
    assert error.evaluate("e => getComputedStyle(e).color") == "rgb(179, 38, 30)"  # --fail: red, not the notice colour
    assert ImportJob.objects.get().status == "failed" and Group.objects.count() == 0
    assert page.console_log.errors == []


def test_group_lines_import_and_the_refused_one_is_listed_in_red(live_server, page, alice, sweep, tmp_path):
    step = tmp_path / "step-3.jsonl"
    step.write_bytes(
        jsonl(small_group("t-1@3", run="sweep", step=3), small_group("t-2@3", run="other", step=3, instance_id="t-2"))
    )

    log_in(page, live_server, "alice", PAGE)
    page.set_input_files("#import-files", str(step))
    page.get_by_label("Step").fill("3")
    page.get_by_role("button", name="Import").click()

    page.wait_for_selector('#import-jobs tr[data-status="done"]', state="attached")
    job = page.locator('#import-jobs tr[data-status="done"]')
    expect(job).to_contain_text("1 groups (1 mixed)")
    expect(job.get_by_test_id("import-warning-count")).to_have_text("1 not imported")
    warnings = job.get_by_test_id("import-warnings")
    expect(warnings).to_be_visible()  # not folded away under "details"
    expect(warnings).to_contain_text("t-2@3: step-3.jsonl line 2: run: 'other'")
    assert warnings.evaluate("e => getComputedStyle(e).color") == "rgb(179, 38, 30)"
    assert list(Group.objects.values_list("uid", "step__number")) == [("t-1@3", 3)]
    assert page.console_log.errors == []
