"""`manage.py scan`: the scanners over trajectory dumps in a team's CI, before import, with no database.

No test here has database access (no `django_db` mark): pytest-django refuses any query, and
the subprocess test proves the command opens no connection to the configured server at all.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from grading.grader.prescreen.catalogue import scanner_version
from tests.helpers.real_groups import real_groups
from tests.helpers.vendored import MINI_SWE_AGENT, OPENHANDS

ROOT = Path(__file__).resolve().parents[3]

# Real trajectories no scanner flags today (sympy__sympy-21612 is flagged: it rewrites expected values of
# a test, `test_modified`): two resolved, one not.
CLEAN = ("django__django-11292", "psf__requests-2317", "astropy__astropy-7606")
FLAGGED = "sympy__sympy-21612"
LEAK_URL = "https://raw.githubusercontent.com/django/django/main/django/core/management/base.py"


def scan(*args: str) -> tuple[int, list[dict], str]:
    """(exit status, the JSON lines on stdout, stderr) of `manage.py scan ARGS`."""
    out, err = StringIO(), StringIO()
    try:
        call_command("scan", *args, stdout=out, stderr=err)
        code = 0
    except CommandError as exc:
        code, _ = exc.returncode, err.write(str(exc))
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def copy_run(target: Path, *instance_ids: str) -> Path:
    """A mini-swe-agent run folder (trajs/<id>/<id>.traj.json, logs/<id>/report.json) of real trajectories."""
    for instance_id in instance_ids:
        for part in (f"trajs/{instance_id}/{instance_id}.traj.json", f"logs/{instance_id}/report.json"):
            (target / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(MINI_SWE_AGENT / part, target / part)
    return target


def plant_leak(run: Path, instance_id: str, at: int = 4) -> int:
    """Insert a turn that downloads the fixed file from the project's GitHub, and its output; returns the turn's index."""
    path = run / "trajs" / instance_id / f"{instance_id}.traj.json"
    traj = json.loads(path.read_text())
    traj["messages"][at:at] = [
        {"role": "assistant", "content": f"THOUGHT: let me see how upstream does it.\n\n```bash\ncurl -sL {LEAK_URL}\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nimport os\n</output>"},
    ]
    path.write_text(json.dumps(traj))
    return at


def test_a_clean_run_folder_has_no_finding_and_exits_0(tmp_path):
    run = copy_run(tmp_path / "run", *CLEAN)
    code, findings, err = scan(str(run))
    assert (code, findings) == (0, [])
    assert "3 rollout(s) in 3 group(s): 0 finding(s), 0 cheat(s), 0 bad input(s)" in err


def test_a_planted_leak_is_one_cheat_finding_citing_its_turn(tmp_path):
    run = copy_run(tmp_path / "run", *CLEAN)
    turn = plant_leak(run, "django__django-11292")
    code, findings, _ = scan(str(run))
    assert code == 1
    assert findings == [
        {
            "path": str(run),
            "source": "trajs/django__django-11292/django__django-11292.traj.json",
            "line": None,
            "group": "django__django-11292",
            "rollout": 0,
            "signal": "project_fetch",
            "category": "leak",
            "scanner": scanner_version("project_fetch"),
            "cheat": True,
            "detail": findings[0]["detail"],
            "tests": [],
            "evidence": {"kind": "turn", "rollout": 0, "locator": str(turn), "note": findings[0]["evidence"]["note"]},
        }
    ]
    assert "raw.githubusercontent.com/django/django" in findings[0]["detail"]


def test_cheats_only_leaves_out_evidence_that_is_no_cheat(tmp_path):
    run = copy_run(tmp_path / "run", FLAGGED, *CLEAN)
    code, findings, _ = scan(str(run))
    assert code == 1
    assert {(f["group"], f["signal"], f["cheat"]) for f in findings} == {(FLAGGED, "test_modified", False)}
    assert scan(str(run), "--cheats-only")[:2] == (0, [])
    plant_leak(run, "psf__requests-2317")  # the repository comes from the instance id: psf/requests
    path = run / "trajs/psf__requests-2317/psf__requests-2317.traj.json"
    path.write_text(path.read_text().replace("django/django/main/django/core/management/base.py", "psf/requests/main/x.py"))
    code, findings, _ = scan(str(run), "--cheats-only")
    assert code == 1
    assert [(f["group"], f["signal"]) for f in findings] == [("psf__requests-2317", "project_fetch")]


def _group_line(group: dict, **changes) -> bytes:
    return json.dumps({**group, **changes}).encode() + b"\n"


def test_group_lines_name_their_line_and_uid_and_a_bad_line_exits_2_after_the_rest(tmp_path):
    groups = {g["task"]["instance_id"]: g for g in real_groups(MINI_SWE_AGENT)}
    clean, leaky = groups["psf__requests-2317"], groups["django__django-11292"]
    rollout = leaky["rollouts"][0]
    leaky = {
        **leaky,
        "rollouts": [
            {
                **rollout,
                "messages": [*rollout["messages"][:4], {"role": "assistant", "content": f"```bash\ncurl {LEAK_URL}\n```"}],
            }
        ],
    }
    broken = {**clean, "uid": "broken@0", "rollouts": [{**clean["rollouts"][0], "reward": 2}]}
    steps = tmp_path / "steps.jsonl"
    steps.write_bytes(_group_line(clean) + b"\n" + _group_line(broken) + _group_line(leaky))
    code, findings, err = scan(str(steps))
    assert code == 2
    assert [(f["source"], f["line"], f["group"], f["rollout"], f["signal"], f["cheat"]) for f in findings] == [
        ("steps.jsonl", 4, "django__django-11292@0", 0, "project_fetch", True)
    ]
    assert findings[0]["evidence"]["locator"] == "4"
    assert f"{steps}: line 3: rollouts[0].reward: must be 0 or 1" in err
    # The same lines compressed: the same findings.
    packed = tmp_path / "packed" / "steps.jsonl.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(steps.read_bytes()))
    code, again, err = scan(str(packed.parent))
    assert code == 2 and [(f["source"], f["line"]) for f in again] == [("steps.jsonl.gz", 4)]
    assert f"{packed}: line 3: rollouts[0].reward" in err


def test_a_later_line_of_a_task_is_screened_with_the_fields_an_earlier_one_stated(tmp_path):
    # A trainer states a task's repository once; the stored task supplies it to later steps.
    group = {g["task"]["instance_id"]: g for g in real_groups(MINI_SWE_AGENT)}["django__django-11292"]
    rollout = group["rollouts"][0]
    step_1 = {
        **group,
        "step": 1,
        "uid": "django__django-11292@1",
        "task": {"instance_id": "django__django-11292"},
        "rollouts": [
            {
                **rollout,
                "messages": [*rollout["messages"][:4], {"role": "assistant", "content": f"```bash\ncurl {LEAK_URL}\n```"}],
            }
        ],
    }
    steps = tmp_path / "steps.jsonl"
    steps.write_bytes(_group_line(step_1))
    assert scan(str(steps))[:2] == (0, [])  # no repository known: nothing names the project
    steps.write_bytes(_group_line(group) + _group_line(step_1))
    code, findings, _ = scan(str(steps))
    assert (code, [(f["group"], f["signal"]) for f in findings]) == (1, [("django__django-11292@1", "project_fetch")])


def test_openhands_findings_name_the_line_of_output_jsonl(tmp_path):
    lines = (OPENHANDS / "output.jsonl").read_text().splitlines()
    record = json.loads(lines[1])
    for event in record["history"]:
        if event.get("action") == "run" and event["args"]["command"].startswith("find src/libponyc"):
            event["args"]["command"] = (
                "curl -sL https://raw.githubusercontent.com/ponylang/ponyc/main/packages/cli/command_parser.pony"
            )
    lines[1] = json.dumps(record)
    (tmp_path / "output.jsonl").write_text("\n".join(lines) + "\n")
    code, findings, _ = scan(str(tmp_path / "output.jsonl"))
    assert code == 1
    assert [(f["source"], f["line"], f["group"], f["signal"]) for f in findings] == [
        ("output.jsonl", 2, "ponylang__ponyc-4593", "project_fetch")
    ]


def test_verl_findings_name_the_row_and_the_group_at_its_step(tmp_path):
    prompt = "Fix the bug in widget.py of the repository in /repo."
    rows = [
        {"input": prompt, "output": "```bash\nsed -i 's/a/b/' widget.py\n```", "score": 1.0, "uid": "g-1"},
        {"input": prompt, "output": "```bash\ngit log --all --oneline\n```", "score": 1.0, "uid": "g-1"},
        {"input": prompt, "output": "```bash\npytest -q\n```", "score": 0.0, "uid": "g-1"},
    ]
    (tmp_path / "12.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    code, findings, _ = scan(str(tmp_path / "12.jsonl"))
    assert code == 1
    assert [(f["source"], f["line"], f["group"], f["rollout"], f["signal"], f["cheat"]) for f in findings] == [
        ("12.jsonl", 2, "g-1@12", 1, "history_search", True)
    ]
    # Where the benchmark's images hold later history (commit0), reading it is no leak.
    assert scan(str(tmp_path / "12.jsonl"), "--future-history")[:2] == (0, [])


def test_a_missing_path_exits_2_after_scanning_the_others(tmp_path):
    run = copy_run(tmp_path / "run", "django__django-11292")
    plant_leak(run, "django__django-11292")
    code, findings, err = scan(str(tmp_path / "nowhere"), str(run))
    assert code == 2
    assert [f["signal"] for f in findings] == ["project_fetch"]
    assert f"{tmp_path / 'nowhere'}: no such file or folder" in err


def test_a_folder_with_nothing_to_scan_is_bad_input_not_a_pass(tmp_path):
    # A mistyped or half-copied dump folder must not let CI pass: only logs, no trajectory.
    run = copy_run(tmp_path / "run", "django__django-11292")
    shutil.rmtree(run / "trajs")
    (tmp_path / "empty").mkdir()
    code, findings, err = scan(str(tmp_path / "empty"), str(run / "logs"))
    assert (code, findings) == (2, [])
    assert f"{tmp_path / 'empty'}: nothing to scan" in err
    assert f"{run / 'logs'}/django__django-11292/report.json: report for django__django-11292, which has no trajectory" in err
    assert err.count("nothing to scan") == 1  # the report's refusal already says what is wrong with logs/


def test_a_file_no_importer_reads_is_bad_input_naming_it(tmp_path):
    run = copy_run(tmp_path / "run", "django__django-11292")
    (run / "trajs" / "broken.traj.json").write_text('{"messages": [')
    code, findings, err = scan(str(run))
    assert (code, findings) == (2, [])
    assert f"{run}/trajs/broken.traj.json: truncated or invalid JSON" in err


def test_untrusted_text_stays_inert_on_a_terminal(tmp_path):
    # A file name and a command with an escape sequence and a bidi override: neither reaches the terminal raw.
    evil = tmp_path / "x\x1b]0;owned\x07\u202e.jsonl"
    evil.write_text("{oops\n")
    run = copy_run(tmp_path / "run", "django__django-11292")
    plant_leak(run, "django__django-11292")
    path = run / "trajs/django__django-11292/django__django-11292.traj.json"
    path.write_text(path.read_text().replace("management/base.py", "management/\\u001b[2J\\u202ebase.py"))
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError):
        call_command("scan", str(evil), str(run), stdout=out, stderr=err)
    for text in (out.getvalue(), err.getvalue()):
        assert all(c == "\n" or " " <= c <= "~" for c in text), repr(text)
    assert "\\u001b]0;owned\\u0007\\u202e.jsonl" in err.getvalue()
    assert json.loads(out.getvalue())["evidence"]["note"].endswith("management/\x1b[2J\u202ebase.py")  # kept, as escapes


def _connections(server: socket.socket, seen: list[str]) -> None:
    """Accept and drop every connection, noting each: a database client gets EOF at once."""
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        seen.append("connected")
        conn.close()


def test_runs_with_no_database_and_opens_no_connection(tmp_path):
    run = copy_run(tmp_path / "run", *CLEAN)
    plant_leak(run, "django__django-11292")
    with socket.create_server(("127.0.0.1", 0)) as server:
        seen: list[str] = []
        threading.Thread(target=_connections, args=(server, seen), daemon=True).start()
        port = server.getsockname()[1]
        env = {**os.environ, "DATABASE_URL": f"postgres://nobody@127.0.0.1:{port}/none", "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "manage.py", "scan", str(run)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 1, done.stderr
        assert [json.loads(line)["signal"] for line in done.stdout.splitlines()] == ["project_fetch"]
        assert seen == []
        # The same settings do reach the server when something asks for the database: the probe sees it.
        probe = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", "from django.db import connection; connection.ensure_connection()"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert probe.returncode != 0 and seen, probe.stderr
