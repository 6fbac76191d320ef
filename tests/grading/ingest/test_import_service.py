"""`manage.py import_runs` and the import service: groups per instance, stable indexes, summaries, real files."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from grading.ingest.importers.scan import Source
from grading.ingest.imports.runs import import_runs
from grading.models import Group, Rollout, Task
from tests.helpers import import_files as b
from tests.helpers.vendored import MINI_SWE_AGENT

pytestmark = pytest.mark.django_db

A, B, C = "octo__widgets-101", "octo__widgets-102", "octo__widgets-103"


def run_command(*args, refused: str | None = None) -> str:
    """The command's output; with `refused`, it must exit non-zero with a message matching it."""
    out = StringIO()
    if refused is None:
        call_command("import_runs", "--project", "acme", "--no-progress", *map(str, args), stdout=out, stderr=StringIO())
    else:
        with pytest.raises(CommandError, match=refused):
            call_command("import_runs", "--project", "acme", "--no-progress", *map(str, args), stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def three_runs(tmp_path):
    """Three runs of the same three tasks. A: pass/fail/pass (mixed), B: all fail, C: pass/pass/no report."""
    return [
        b.mini_run(tmp_path / "run-1", {A: True, B: False, C: True}, seed=1),
        b.mini_run(tmp_path / "run-2", {A: False, B: False, C: True}, seed=2, v11=True),
        b.mini_run(tmp_path / "run-3", {A: True, B: False, C: None}, seed=3),
    ]


def test_three_runs_become_mixed_groups_of_three_on_the_group_page(client, alice, acme, three_runs):
    out = run_command("--run", "sweep", "--step", 4, *three_runs)
    assert "groups: 3 (3 created, 0 extended, 0 unchanged), 1 mixed" in out
    assert "rollouts: 9 (9 created, 0 unchanged) · 4 pass, 4 fail, 1 unknown reward" in out
    assert f"run-3/trajs/{C}/{C}.traj.json: no verdict" in out
    group = Group.objects.get(uid=f"{A}@4")
    assert (group.n_rollouts, group.n_passed, group.is_mixed, group.step.number) == (3, 2, True, 4)
    assert group.task.repo == "octo/widgets" and group.task.problem_statement == b.statement(A).strip()
    rollouts = list(group.rollouts.order_by("index"))
    assert [r.source_ref for r in rollouts] == [f"run-{n}/trajs/{A}/{A}.traj.json" for n in (1, 2, 3)]
    assert [r.source_format for r in rollouts] == ["mini-swe-agent-1", "mini-swe-agent-1.1", "mini-swe-agent-1"]
    assert Rollout.objects.get(group__uid=f"{C}@4", index=2).reward is None
    assert Group.objects.get(uid=f"{C}@4").n_unknown == 1

    client.force_login(alice)
    html = client.get(reverse("group", args=["acme", "sweep", f"{A}@4"])).content.decode()
    assert html.count('class="lane ') == 3
    assert "2 pass" in html and "1 fail" in html and "mixed: carries signal" in html
    assert f"run-2/trajs/{A}/{A}.traj.json" in html and "mini-swe-agent-1.1" in html
    html = client.get(reverse("group", args=["acme", "sweep", f"{C}@4"])).content.decode()
    assert '<span class="badge unknown">1 unknown</span>' in html


def test_importing_again_in_any_order_changes_nothing(acme, three_runs):
    run_command("--run", "sweep", "--step", 4, *three_runs)
    before = {(r.group.uid, r.index, r.source_ref, r.content_hash) for r in Rollout.objects.select_related("group")}
    out = run_command("--run", "sweep", "--step", 4, *reversed(three_runs))
    assert "groups: 3 (0 created, 0 extended, 3 unchanged)" in out and "(0 created, 9 unchanged)" in out
    assert before == {(r.group.uid, r.index, r.source_ref, r.content_hash) for r in Rollout.objects.select_related("group")}


def test_a_later_run_extends_the_groups_with_the_next_index(acme, three_runs, tmp_path):
    run_command("--run", "sweep", "--step", 4, *three_runs[:2])
    out = run_command("--run", "sweep", "--step", 4, *three_runs)
    assert "groups: 3 (0 created, 3 extended, 0 unchanged)" in out
    assert Rollout.objects.get(group__uid=f"{A}@4", index=2).source_ref == f"run-3/trajs/{A}/{A}.traj.json"


def test_a_changed_verdict_is_refused_as_a_conflict_not_overwritten(acme, tmp_path):
    run = b.mini_run(tmp_path / "late", {A: None})
    run_command("--run", "r", "--step", 0, run)
    b.write(run / "logs" / A / "report.json", b.report(A, True))
    with pytest.raises(CommandError, match="refused"):
        run_command("--run", "r", "--step", 0, run)
    assert Rollout.objects.get().reward is None


def test_every_format_through_the_command(acme, tmp_path):
    mini = b.mini_run(tmp_path / "mini", {A: True})
    swe = tmp_path / "swe"
    b.write(swe / A / f"{A}.traj", b.swe_agent_retry(A, [b.patch(7), b.patch(8)], chosen=0))
    b.write(swe / "logs" / A / "report.json", b.report(A, False))
    preds = b.write(tmp_path / "preds.jsonl", json.dumps(b.prediction(A, "")) + "\n")
    out = run_command("--run", "mixed-agents", "--step", 1, mini, swe, preds)
    assert "groups: 1 (1 created" in out and "rollouts: 4 (4 created" in out
    rollouts = list(Rollout.objects.filter(group__uid=f"{A}@1").order_by("index"))
    assert [(r.source_format, r.reward) for r in rollouts] == [
        ("mini-swe-agent-1", 1.0),
        ("swe-agent", 0.0),
        ("swe-agent", None),
        ("swebench-predictions", 0.0),
    ]
    assert [r.source_ref for r in rollouts][1:] == [
        f"swe/{A}/{A}.traj#attempt-0",
        f"swe/{A}/{A}.traj#attempt-1",
        f"preds.jsonl#{A}",
    ]
    assert Group.objects.get().is_mixed is True
    assert rollouts[1].content.messages[2]["thought"] == "I'll look at the file."


def test_skipped_files_are_listed_by_name_and_reason(acme, tmp_path):
    run = b.mini_run(tmp_path / "messy", {A: True, B: None})
    b.write(run / "trajs" / C / f"{C}.traj.json", json.dumps(b.mini_v1(C))[:300])
    b.write(run / "logs" / "ghost__repo-1" / "report.json", b.report("ghost__repo-1", True))
    b.write(run / "README.txt", "hello")
    # two files were meant to be imported and were not: the command says so and exits non-zero
    out = run_command(
        "--run", "r", "--step", 0, run, refused=r"2 group\(s\) imported, but 2 file\(s\), attempt\(s\) or group\(s\) were refused"
    )
    assert "rollouts: 2 (2 created, 0 unchanged) · 1 pass, 0 fail, 1 unknown reward" in out
    assert "skipped: 2" in out
    assert f"messy/trajs/{C}/{C}.traj.json: truncated or invalid JSON" in out
    assert "messy/logs/ghost__repo-1/report.json: report for ghost__repo-1, which has no trajectory" in out
    assert "not read: 1\n  messy/README.txt: unrelated file" in out  # a file no importer reads refuses nothing
    assert f"reward unknown: 1\n  messy/trajs/{B}/{B}.traj.json: no verdict" in out


def test_command_refusals(acme, tmp_path):
    with pytest.raises(CommandError, match="no project 'nope'"):
        call_command("import_runs", "--project", "nope", "--run", "r", "--step", "0", str(tmp_path), stdout=StringIO())
    b.write(tmp_path / "empty" / "notes.txt", "x")
    with pytest.raises(CommandError, match="nothing imported"):
        run_command("--run", "r", "--step", 0, tmp_path / "empty")
    with pytest.raises(CommandError, match="--step must be >= 0"):
        run_command("--run", "r", "--step", -1, tmp_path / "empty")
    with pytest.raises(CommandError):
        run_command("--run", "r", "--step", 0, "--format", "openhands", tmp_path / "empty")


def test_progress_bar_goes_to_stderr(acme, tmp_path, capsys):
    run = b.mini_run(tmp_path / "r", {A: True, B: False})
    out = StringIO()
    call_command("import_runs", "--project", "acme", "--run", "r", "--step", "0", str(run), stdout=out)
    err = capsys.readouterr().err
    assert "2/2" in err and "instance" in err
    assert "groups: 2" in out.getvalue() and "instance/s" not in out.getvalue()


def test_nul_characters_are_replaced_not_refused(acme, tmp_path):
    traj = b.mini_v1(A)
    traj["messages"][3]["content"] = "binary\x00output"
    b.write(tmp_path / "nul" / f"{A}.traj.json", traj)
    summary = import_runs(project=acme, run="r", step=0, sources=[Source(tmp_path / "nul")])
    assert summary.refused == [] and summary.rollouts_created == 1
    assert Rollout.objects.get().content.messages[3]["content"] == "binary\ufffdoutput"


def test_stored_task_fields_are_never_a_conflict(acme, tmp_path):
    run = b.mini_run(tmp_path / "r", {A: True})
    import_runs(project=acme, run="r", step=0, sources=[Source(run)])
    Task.objects.filter(instance_id=A).update(problem_statement="curated by hand", repo="octo/widgets-fork")
    other = b.mini_run(tmp_path / "r2", {A: False}, seed=4)
    summary = import_runs(project=acme, run="r", step=0, sources=[Source(run), Source(other)])
    assert summary.refused == [] and summary.groups_extended == 1
    assert Task.objects.get(instance_id=A).problem_statement == "curated by hand"


def test_real_mini_swe_agent_run_imports_with_its_verdicts_and_turn_counts(acme):
    out = run_command("--run", "gemini-3-pro", "--step", 0, MINI_SWE_AGENT)
    assert "groups: 16 (16 created, 0 extended, 0 unchanged), 0 mixed" in out
    assert "rollouts: 16 (16 created, 0 unchanged) · 8 pass, 8 fail, 0 unknown reward" in out
    assert "mini-swe-agent-gemini-3-pro/LICENSE.md: unrelated file" in out
    for traj_path in sorted((MINI_SWE_AGENT / "trajs").glob("*/*.traj.json")):
        instance_id = traj_path.parent.name
        traj = json.loads(traj_path.read_text())
        report = json.loads((MINI_SWE_AGENT / "logs" / instance_id / "report.json").read_text())
        rollout = Rollout.objects.select_related("content").get(group__uid=f"{instance_id}@0")
        assert rollout.passed is report["resolved"], instance_id
        assert rollout.n_messages == len(traj["messages"]) == len(rollout.content.messages), instance_id
        assert rollout.patch_files >= 1 and rollout.source_format == "mini-swe-agent-1"
        assert rollout.cost_usd == pytest.approx(traj["info"]["model_stats"]["instance_cost"])
        assert rollout.tests_passed + rollout.tests_failed > 0
        # the task's test lists, from the harness's report: the scanners tell a scored tampering by them
        status = report[instance_id]["tests_status"] if instance_id in report else report["tests_status"]
        task = rollout.group.task
        for stored, key in ((task.fail_to_pass, "FAIL_TO_PASS"), (task.pass_to_pass, "PASS_TO_PASS")):
            assert stored == [*status[key]["success"], *status[key]["failure"]], (instance_id, key)
        assert task.fail_to_pass, instance_id
    again = run_command("--run", "gemini-3-pro", "--step", 0, MINI_SWE_AGENT)
    assert "groups: 16 (0 created, 0 extended, 16 unchanged)" in again


def test_real_trajectories_as_three_runs_make_mixed_groups(client, alice, acme, tmp_path):
    """The real files copied as three runs whose verdicts differ: every group mixed, shown side by side."""
    trajs = sorted((MINI_SWE_AGENT / "trajs").glob("*/*.traj.json"))[:3]
    runs = []
    for n in range(3):
        root = tmp_path / f"gemini-{n}"
        for k, traj_path in enumerate(trajs):
            instance_id = traj_path.parent.name
            b.write(root / "trajs" / instance_id / traj_path.name, traj_path.read_text())
            b.write(root / "logs" / instance_id / "report.json", b.report(instance_id, (n + k) % 2 == 0, keyed=False))
        runs.append(root)
    out = run_command("--run", "real-x3", "--step", 2, *runs)
    assert "groups: 3 (3 created, 0 extended, 0 unchanged), 3 mixed" in out
    client.force_login(alice)
    uid = f"{trajs[0].parent.name}@2"
    html = client.get(reverse("group", args=["acme", "real-x3", uid])).content.decode()
    assert html.count('class="lane ') == 3 and "mixed: carries signal" in html
    assert all(f"gemini-{n}/trajs/" in html for n in range(3))
