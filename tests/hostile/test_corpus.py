"""Every corpus case through REST ingest and the file import command: a clear per-line
refusal naming the field, or the line stored exactly; the lines around it always land,
and a refused line leaves no row behind."""

from __future__ import annotations

import io

import orjson
import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from grading.models import Group, Rollout, RolloutContent, Run, Step, Task
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import post_lines
from tests.hostile.corpus import CASES, Case, record

pytestmark = pytest.mark.django_db

MODELS = (Run, Step, Task, Group, Rollout, RolloutContent)
GOOD = (small_group("good-a@1", instance_id="t-good-a"), small_group("good-b@1", instance_id="t-good-b", rewards=(1, 1)))


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count() for m in MODELS}


def expected_delta(case: Case, hostile: bytes) -> dict[str, int]:
    """Rows the good lines add, plus the hostile line's own when it is legal."""
    delta = {"Run": 1, "Step": 1, "Task": 2, "Group": 2, "Rollout": 5, "RolloutContent": 5}
    if case.expect == "stored":
        obj = orjson.loads(hostile)
        n = len(obj["rollouts"])
        new_run = obj["run"] != "r1"
        delta["Run"] += new_run
        delta["Step"] += new_run or obj["step"] != 1
        delta.update(
            Task=delta["Task"] + 1,
            Group=delta["Group"] + 1,
            Rollout=delta["Rollout"] + n,
            RolloutContent=delta["RolloutContent"] + n,
        )
    return delta


def body(hostile: bytes) -> bytes:
    return jsonl(GOOD[0]) + hostile + b"\n" + jsonl(GOOD[1])


def check_rows(channel: str, case: Case, before: dict, hostile: bytes) -> None:
    after = counts()
    want = expected_delta(case, hostile)
    got = {name: after[name] - before[name] for name in before}
    lost = sum(max(0, want[k] - got[k]) for k in want)
    partial = sum(max(0, got[k] - want[k]) for k in want)
    assert set(Group.objects.filter(uid__startswith="good-").values_list("uid", flat=True)) == {"good-a@1", "good-b@1"}
    return lost, partial, got, want


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rest_ingest(client, alice_token, case):
    hostile = case.build()
    before = counts()
    with override_settings(**case.settings):
        r = post_lines(client, alice_token, body(hostile))
    lost, partial, got, want = check_rows("REST ingest", case, before, hostile)
    ok = r.status_code < 500 and lost == 0 and partial == 0
    report = r.json()
    if case.expect == "refused":
        ok = ok and r.status_code == 207 and report["refused"] == 1 and report["groups"]["created"] == 2
        errors = report["errors"]
        ok = ok and len(errors) == 1 and errors[0]["line"] == 2 and case.error in errors[0]["error"]
    else:
        ok = ok and r.status_code == 200 and report["refused"] == 0 and report["groups"]["created"] == 3
    record(
        "REST ingest",
        case.name,
        ("refused" if case.expect == "refused" else "stored") if ok else "FAILED",
        lost_rows=lost,
        partial_rows=partial,
    )
    assert ok, (r.status_code, report, got, want)
    if case.expect == "stored":  # stored exactly: the API gives back what was sent
        sent = orjson.loads(hostile)
        back = client.get(
            f"/api/v1/groups/{sent['uid']}/", {"project": "acme", "run": sent["run"]}, HTTP_AUTHORIZATION=f"Token {alice_token}"
        )
        assert back.status_code == 200
        stored = back.json()
        assert [r["messages"] for r in stored["rollouts"]] == [r["messages"] for r in sent["rollouts"]]
        assert [r["patch"] for r in stored["rollouts"]] == [r["patch"] for r in sent["rollouts"]]
        assert [r["test_log"] for r in stored["rollouts"]] == [r["test_log"] for r in sent["rollouts"]]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_file_import(tmp_path, acme, case):
    hostile = case.build()
    path = tmp_path / "step.jsonl"
    path.write_bytes(body(hostile))
    before = counts()
    out = io.StringIO()
    refused_error = None
    with override_settings(**case.settings):
        try:
            call_command("import_groups", str(path), project="acme", no_progress=True, stdout=out, stderr=io.StringIO())
        except CommandError as exc:
            refused_error = str(exc)
    lost, partial, got, want = check_rows("file import", case, before, hostile)
    text = out.getvalue()
    ok = lost == 0 and partial == 0
    if case.expect == "refused":
        ok = ok and refused_error is not None and "line 2: " in text and case.error in text and "1 refused" in text
    else:
        ok = ok and refused_error is None and "0 refused" in text
    record(
        "file import",
        case.name,
        ("refused" if case.expect == "refused" else "stored") if ok else "FAILED",
        lost_rows=lost,
        partial_rows=partial,
    )
    assert ok, (text, refused_error, got, want)


def test_gzip_file_with_every_case_at_once(tmp_path, acme):
    """The whole corpus as one gzip file: each refused line is named by its number, every
    legal line lands (each under its own uid here, so none is a conflict of another)."""
    import gzip

    cases = [c for c in CASES if not c.settings]
    lines = []
    for number, case in enumerate(cases, start=1):
        raw = case.build()
        if case.expect == "stored":
            obj = orjson.loads(raw)
            obj["uid"], obj["task"]["instance_id"] = f"case-{number}@1", f"t-case-{number}"
            raw = orjson.dumps(obj)
        lines.append(raw)
    path = tmp_path / "all.jsonl.gz"
    path.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_groups", str(path), project="acme", no_progress=True, stdout=out, stderr=io.StringIO())
    text = out.getvalue()
    for number, case in enumerate(cases, start=1):
        if case.expect == "refused":
            assert f"line {number}: " in text and case.error in text, case.name
    n_refused = sum(c.expect == "refused" for c in cases)
    n_stored = len(cases) - n_refused
    assert f"groups {n_stored} created" in text and f"{n_refused} refused" in text
    assert Group.objects.count() == n_stored
