"""Hostile agent-run files through `import_runs` (the path behind `manage.py import_runs`
and upload jobs): a broken or absurd file costs only its own instance, with a reason."""

from __future__ import annotations

import json

import pytest

from grading.ingest.importers.scan import Source
from grading.ingest.imports.runs import import_runs
from grading.models import Group, Project
from tests.helpers import import_files as b
from tests.hostile.corpus import record

pytestmark = pytest.mark.django_db

GOOD, BAD = "octo__widgets-101", "octo__widgets-102"


def run_folder(tmp_path, mutate):
    root = b.mini_run(tmp_path / "run-1", {GOOD: True, BAD: False}, seed=1)
    path = next(root.glob(f"**/{BAD}.traj.json"))
    path.write_bytes(mutate(path.read_bytes()))
    return root


def nest(depth: int):
    def mutate(raw: bytes) -> bytes:
        traj = json.loads(raw)
        traj["messages"][1]["extra"] = {"deep": "DEEP"}
        return json.dumps(traj).encode().replace(b'"DEEP"', b"[" * depth + b"]" * depth)

    return mutate


@pytest.mark.parametrize(
    ("name", "mutate", "says"),
    [
        ("trajectory truncated", lambda raw: raw[: len(raw) // 2], "truncated or invalid JSON"),
        ("trajectory with invalid UTF-8", lambda raw: raw.replace(b"Widget", b"Wid\xffget", 1), "invalid JSON"),
        ("trajectory with a lone surrogate", lambda raw: raw.replace(b"Widget", b"Wid\\udc00get", 1), "invalid JSON"),
        ("trajectory nested 2,000 deep", nest(2000), "invalid JSON"),
    ],
)
def test_bad_trajectory_costs_only_its_instance(tmp_path, name, mutate, says):
    project = Project.objects.create(name="acme")
    root = run_folder(tmp_path, mutate)
    summary = import_runs(project=project, run="r1", step=1, sources=[Source(root)])
    reasons = [f.reason for f in summary.findings] + [r["error"] for r in summary.refused]
    ok = (
        Group.objects.filter(uid=f"{GOOD}@1").exists()
        and not Group.objects.filter(uid=f"{BAD}@1").exists()
        and any(says in reason for reason in reasons)
    )
    record("agent-run import", name, "refused" if ok else "FAILED")
    assert ok, reasons


@pytest.mark.parametrize("depth", [100, 300, 1000])
def test_deep_nesting_the_importer_does_not_carry_is_dropped(tmp_path, depth):
    """The importers keep text, actions and stats, not a message's raw `extra`: a 1,000-deep
    `extra` (orjson reads up to 1,024) is dropped and the attempt imports normally."""
    project = Project.objects.create(name="acme")
    summary = import_runs(project=project, run="r1", step=1, sources=[Source(run_folder(tmp_path, nest(depth)))])
    ok = Group.objects.filter(uid__in=[f"{GOOD}@1", f"{BAD}@1"]).count() == 2 and not summary.refused
    record("agent-run import", f"trajectory with extra nested {depth} deep", "stored" if ok else "FAILED")
    assert ok, summary.refused


def test_nul_in_a_trajectory_is_replaced_and_noted(tmp_path):
    project = Project.objects.create(name="acme")
    root = run_folder(tmp_path, lambda raw: raw.replace(b"Widget", b"Wid\\u0000get", 1))
    summary = import_runs(project=project, run="r1", step=1, sources=[Source(root)])
    ok = Group.objects.filter(uid=f"{BAD}@1").exists() and any("NUL" in f.reason for f in summary.findings)
    record("agent-run import", "trajectory with \\u0000", "stored" if ok else "FAILED")
    assert ok


@pytest.mark.parametrize("run", ["team/run", "..", "a\u202eb"])
def test_run_names_that_break_urls_are_refused(run):
    project = Project.objects.create(name="acme")
    with pytest.raises(ValueError, match="run: "):
        import_runs(project=project, run=run, step=1, sources=[])
    record("agent-run import", f"run name {run!r}", "refused")


@pytest.mark.parametrize("run", ["team/run", "..", "a\u202eb"])
def test_upload_refuses_run_names_that_break_urls(client, alice_token, settings, tmp_path, run):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from grading.models import ImportJob

    settings.MEDIA_ROOT = tmp_path / "media"
    r = client.post(
        "/api/v1/imports/?project=acme",
        {"run": run, "step": "1", "file": [SimpleUploadedFile("a.json", b"{}")]},
        HTTP_AUTHORIZATION=f"Token {alice_token}",
    )
    ok = r.status_code == 400 and "run" in r.json()["fields"] and ImportJob.objects.count() == 0
    record("agent-run import", f"upload with run name {run!r}", "refused" if ok else "FAILED")
    assert ok, r.content
