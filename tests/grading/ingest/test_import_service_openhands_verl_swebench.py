"""OpenHands, verl dumps and older harness reports through `import_runs` into the store and onto the group page."""

from __future__ import annotations

import json
import shutil
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from grading.models import Group, Rollout, RolloutContent, Task
from tests.helpers import import_files as b
from tests.helpers.import_files import PROMPTS, dump_generations, oh_line, write_jsonl
from tests.helpers.vendored import FIXTURES

pytestmark = pytest.mark.django_db

A, B, C = "octo__widgets-101", "octo__widgets-102", "octo__widgets-103"
OPENHANDS = FIXTURES / "openhands-multi-swe-bench"


def run_command(*args, refused: str | None = None) -> str:
    """The command's output; with `refused`, it must exit non-zero with a message matching it."""
    out = StringIO()
    if refused is None:
        call_command("import_runs", "--project", "acme", "--no-progress", *map(str, args), stdout=out, stderr=StringIO())
    else:
        with pytest.raises(CommandError, match=refused):
            call_command("import_runs", "--project", "acme", "--no-progress", *map(str, args), stdout=out, stderr=StringIO())
    return out.getvalue()


def test_real_openhands_run_imports_and_shows_on_the_group_page(client, alice, acme, tmp_path):
    folder = tmp_path / "oh"
    folder.mkdir()
    shutil.copy(OPENHANDS / "output.jsonl", folder / "output.jsonl")
    out = run_command("--run", "oh", "--step", 1, folder)
    assert "groups: 3 (3 created, 0 extended, 0 unchanged), 0 mixed" in out
    assert "rollouts: 3 (3 created, 0 unchanged) · 0 pass, 0 fail, 3 unknown reward" in out
    lines = {json.loads(line)["instance_id"]: json.loads(line) for line in (folder / "output.jsonl").read_text().splitlines()}
    for instance_id, line in lines.items():
        rollout = Rollout.objects.select_related("content", "group__task").get(group__uid=f"{instance_id}@1")
        assert rollout.reward is None and rollout.n_messages == len(line["history"]) and rollout.source_format == "openhands"
        assert rollout.content.patch == line["test_result"]["git_patch"] and rollout.patch_files == 1
        task = rollout.group.task
        assert (task.repo, task.base_commit, task.problem_statement) == (
            "ponylang/ponyc",
            line["instance"]["base_commit"],
            line["instance"]["problem_statement"],
        )
    assert {r.group.uid: r.stats["turns"] for r in Rollout.objects.select_related("group")} == {
        "ponylang__ponyc-4595@1": 23,
        "ponylang__ponyc-4593@1": 33,
        "ponylang__ponyc-4588@1": 49,
    }
    assert "unchanged" in run_command("--run", "oh", "--step", 1, folder) and Rollout.objects.count() == 3

    client.force_login(alice)
    html = client.get(reverse("group", args=["acme", "oh", "ponylang__ponyc-4595@1"])).content.decode()
    assert "<dt>messages</dt><dd>49</dd>" in html and "openhands" in html and "src/libponyc/ast/parser.c" in html
    assert "<dt>reward</dt><dd>unknown</dd>" in html
    turns = client.get(reverse("rollout-turns", args=["acme", "oh", "ponylang__ponyc-4595@1", 0])).content.decode()
    assert "ls -l /workspace/ponylang__ponyc__0.1" in turns


def test_openhands_task_fields_fill_in_and_never_conflict(acme, tmp_path):
    write_jsonl(tmp_path / "a" / "output.jsonl", [oh_line(A, resolved=True)])
    run_command("--run", "oh", "--step", 1, tmp_path / "a")
    task = Task.objects.get(instance_id=A)
    assert (task.fail_to_pass, task.pass_to_pass, task.base_commit) == (["t::a"], ["t::b", "t::c"], "d16bfe05a7")
    write_jsonl(tmp_path / "b" / "output.jsonl", [oh_line(A, resolved=False, patch=b.patch(2))])
    out = run_command("--run", "oh", "--step", 2, tmp_path / "b")  # the same task at another step: fields already stored
    assert "1 created" in out and "refused" not in out
    assert [g.n_passed for g in Group.objects.order_by("uid")] == [1, 0]


def test_verl_dump_imports_groups_per_prompt_at_their_steps_and_shows_text(client, alice, acme, tmp_path):
    dump = tmp_path / "rollout_data"
    dump_generations(
        dump,
        1,
        [PROMPTS[0]] * 3 + [PROMPTS[1]] * 3,
        ["4", "5", "4", "cba", "cba", "abc"],
        [1.0, 0.0, 1.0, 1.0, 1.0, 0.0],
        {"acc": [True, False, True, True, True, False]},
    )
    dump_generations(dump, 2, [PROMPTS[0]] * 2, ["4 <script>alert(1)</script>", "5"], [0.9, 0.1], {})
    out = run_command("--run", "grpo", "--step", 0, dump, refused=r"2 group\(s\) imported, but 1 file")
    assert "rollout_data/2.jsonl: line 1: score 0.9 is not 0 or 1; give a reward threshold (--reward-threshold" in out
    assert Group.objects.filter(step__number=2).count() == 0 and Group.objects.count() == 2
    out = run_command("--run", "grpo", "--step", 0, "--reward-threshold", 0.5, dump)
    assert "groups: 3 (1 created, 0 extended, 2 unchanged), 3 mixed" in out  # step 1's groups came in the first time
    groups = {(g.step.number, g.task.problem_statement): g for g in Group.objects.select_related("step", "task")}
    assert sorted(groups) == sorted([(1, PROMPTS[0]), (1, PROMPTS[1]), (2, PROMPTS[0])])
    counts = {key: (g.n_rollouts, g.n_passed) for key, g in groups.items()}
    assert counts == {(1, PROMPTS[0]): (3, 2), (1, PROMPTS[1]): (3, 2), (2, PROMPTS[0]): (2, 1)}
    assert groups[(1, PROMPTS[0])].task_id == groups[(2, PROMPTS[0])].task_id  # the same prompt is the same task
    text_group = groups[(2, PROMPTS[0])]

    client.force_login(alice)
    html = client.get(reverse("group", args=["acme", "grpo", text_group.uid])).content.decode()
    assert (
        'data-testid="response-0"' in html
        and "4 &lt;script&gt;alert(1)&lt;/script&gt;" in html
        and "<script>alert(1)" not in html
    )
    assert "text only, no patch" in html


def test_older_harness_run_folder_gives_pass_or_fail_and_the_summary_says_which_rule(acme, tmp_path):
    run = b.mini_run(tmp_path / "run", {A: None, B: None, C: None})
    b.write(
        run / "results.json",
        {
            "stats": {"generated": 3, "with_logs": 3, "applied": 3, "resolved": 1},
            "resolved": [A],
            "resolved_per_project": {"octo/widgets": [A]},
        },
    )
    out = run_command("--run", "old", "--step", 0, run)
    assert "1 pass, 2 fail, 0 unknown reward" in out
    assert (
        "run/results.json: older SWE-bench harness report: 1 instance(s) pass (listed in 'resolved'), "
        "2 fail (a prediction in this run, not in 'resolved')"
    ) in out
    verdicts = {
        r.group.task.instance_id: r.content.metadata["verdict"] for r in Rollout.objects.select_related("group__task", "content")
    }
    assert verdicts[A] == {
        "status": "resolved",
        "source": "old-report",
        "ref": "run/results.json",
        "rule": "listed in 'resolved' of the older harness report",
    }
    assert verdicts[B]["rule"] == "a prediction in this run and not in 'resolved' of the older harness report"
    assert RolloutContent.objects.count() == 3


def test_a_text_only_verl_group_is_served_and_judged_like_any_other(client, bob, acme, tmp_path):
    from reviews.models import Judgment
    from reviews.selectors.lanes import lanes_for
    from tests.helpers.desk import as_lanes, judgment_post

    dump_generations(tmp_path / "d", 7, [PROMPTS[1]] * 3, ["cba", "abc", "c-b-a"], [1, 0, 1], {})
    run_command("--run", "grpo", "--step", 0, tmp_path / "d")
    group = Group.objects.get()
    assert (group.step.number, group.is_mixed) == (7, True)
    client.force_login(bob)
    r = client.post("/projects/acme/review/next/")
    assert r.status_code == 302 and r.url.endswith(f"/runs/grpo/groups/{group.uid}/")
    html = client.get(r.url).content.decode()
    lane = lanes_for(user=bob, group=group).key  # bob judges it blind: its lanes are labels
    assert f'data-testid="response-{lane(0)}"' in html and "c-b-a" in html
    r = client.post(f"{r.url}judgment/", as_lanes(judgment_post({0: "T1", 2: "T2"}), bob, group))
    assert r.status_code == 302
    judgment = Judgment.objects.get(group=group, reviewer=bob)
    assert sorted((i.rollout.index, i.tier) for i in judgment.items.select_related("rollout")) == [(0, "T1"), (2, "T2")]
