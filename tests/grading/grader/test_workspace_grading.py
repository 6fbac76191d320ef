"""The LLM grader in its workspace, end to end: a group of real patches on a git repository
built in the test (served as file://), graded by the real openai client against the scripted
local server (tests/helpers/fake_openai.py). The conversation reads a rollout's patched file,
searches the code, runs a check in the bubblewrap sandbox, and cites a file line and the
check; the citations resolve, the check is stored with the verdict, the group page shows both
after the reveal, and the labeled export carries the check."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from django.test import override_settings

from grading.grader.tools import call_tool
from grading.jobs.grade import grade_group
from grading.models import CheckPolicy, Verdict, VerdictCheck
from grading.registry.workspaces import load_workspace
from reviews.selectors.labeled import labeled_lines
from tests.factories import make_group, make_judgment, make_run, make_step, make_task
from tests.helpers.fake_openai import FakeOpenAI, call, submit
from tests.helpers.gitrepos import ENV, git, incomplete_copy, patch_at, tiny_package
from tests.helpers.people import member
from tests.helpers.repo_groups import fix_mean, tiny_group

pytestmark = pytest.mark.django_db

RUBRIC = ("solution_fit", "implementation_precision", "minimality", "side_effect_avoidance", "codebase_consistency")
# A check no file shows: the rollout's fix on the task's input, then an input its change
# breaks, with the sandbox's own python3 (the host's files, read-only), and a connection the
# sandbox must refuse (PostgreSQL on this machine).
CHECK = (
    "python3 -c \"from tiny import mean; print('mean of nothing:', mean([]))\"; "
    'python3 -c "from tiny import add; assert add(0.5, 0.25) == 0.75, add(0.5, 0.25)"; echo status=$?; '
    "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 5432), timeout=2)\" || echo NO-NETWORK"
)


def judgment(rollout, tier, rank, evidence=(), score=4):
    return {
        "rollout": rollout,
        "tier": tier,
        "rank": rank,
        "cheat": False,
        "scores": dict.fromkeys(RUBRIC, score),
        "evidence": [{"kind": k, "rollout": rollout, "locator": loc, "note": note} for k, loc, note in evidence],
    }


@pytest.fixture
def world(tmp_path, settings, acme):
    group, _ = tiny_group(tmp_path, settings, acme)
    CheckPolicy.objects.create(project=acme, enabled=True, max_checks=2, seconds=60)
    return group


def test_the_grader_reads_searches_runs_a_check_and_cites_them(world, client, acme):
    script = [
        call("read_file", {"path": "tiny/calc.py", "rollout": 0}),
        call("search_code", {"pattern": "add(", "fixed": True}),
        call("run_check", {"rollout": 1, "command": CHECK}),
        submit(
            [
                judgment(0, "T1", 1, [("file", "0:tiny/calc.py:9", "the empty case, nothing else")]),
                judgment(3, "T2", 2, [("patch", "tiny/calc.py:1", "does not apply at the base")]),
                judgment(
                    1,
                    "T3",
                    3,
                    [("check", "1", "add(0.5, 0.25) is 0, not 0.75"), ("file", "1:tiny/calc.py:2", "add truncates")],
                    score=2,
                ),
            ]
        ),
    ]
    with (
        FakeOpenAI(script=script) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True),
    ):
        verdict = grade_group(group_id=world.pk, backend="llm")

    assert verdict.status == Verdict.Status.VALID, verdict.errors
    tools = [t["function"]["name"] for t in fake.requests[0]["tools"]]
    assert {"read_file", "search_code", "diff_file", "touched_files", "run_check"} <= set(tools)
    results = [json.loads(m["content"]) for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    read, grep, check = results[:3]
    assert read["at"] == 0 and read["lines"][8] == {
        "locator": "0:tiny/calc.py:9",
        "text": "    return total / len(values) if values else 0.0",
    }
    assert {m["path"] for m in grep["matches"]} >= {"tiny/calc.py", "tests/test_calc.py"}  # the callers of add()
    assert grep["at"] == "base" and all(m["locator"].startswith("base:") for m in grep["matches"])
    assert check["check"] == 1 and check["exit_status"] == 0  # the last command of the line: echo
    output = check["output"]["text"]
    assert "mean of nothing: 0.0" in output and "AssertionError: 0" in output and "status=1" in output
    assert "NO-NETWORK" in output and "ConnectionRefused" not in output.split("status=1")[0]

    stored = VerdictCheck.objects.get(verdict=verdict)
    assert (stored.number, stored.rollout.index, stored.command, stored.sandbox) == (1, 1, CHECK, "bubblewrap")
    assert "AssertionError: 0" in stored.output and stored.seconds > 0
    grades = {g.rollout.index: g for g in verdict.grades.all()}
    assert grades[1].tier == "T3" and [e["kind"] for e in grades[1].evidence] == ["check", "file"]

    # After the reveal, a reviewer sees the citations and the check
    bob = member("bob", acme, "reviewer")
    client.force_login(bob)
    base = f"/projects/acme/runs/{world.run.name}/groups/{world.uid}/"
    html = client.post(base + "show-verdict/", follow=True).content.decode()
    assert 'data-testid="grader-checks"' in html and 'id="check-1"' in html and "AssertionError: 0" in html
    assert 'href="#check-1"' in html
    assert "rollouts/0/files/?path=tiny%2Fcalc.py&amp;line=9#file-0-L9" in html
    # the citation lands on the line, the patch's lines marked
    page = client.get(base + "rollouts/0/files/?path=tiny%2Fcalc.py&line=9", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="file-0-L9" class="added target"' in page and "if values else 0.0" in page
    at_base = client.get(base + "rollouts/0/files/?path=tiny%2Fcalc.py&at=base", HTTP_HX_REQUEST="true").content.decode()
    assert "if values else 0.0" not in at_base and 'class="added' not in at_base

    # and the labeled export carries the check with the verdict, once a person judged the group
    make_judgment(world, bob, tiers={0: "T1", 1: "T2", 3: "T2"})
    (line,) = labeled_lines(run=world.run)
    (exported,) = [v for v in line["verdicts"] if v["grader"] == verdict.grader]
    assert [(c["number"], c["rollout"], c["command"], c["exit_status"]) for c in exported["checks"]] == [(1, 1, CHECK, 0)]
    assert "status=1" in exported["checks"][0]["output"]


def test_without_a_sandbox_or_with_checks_off_no_check_is_offered(world, settings):
    CheckPolicy.objects.filter(project=world.run.project).update(enabled=False)
    script = [
        call("run_check", {"rollout": 1, "command": "true"}),
        submit([judgment(0, "T1", 1), judgment(1, "T1", 1), judgment(3, "T1", 1)]),
    ]
    with (
        FakeOpenAI(script=script) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True),
    ):
        verdict = grade_group(group_id=world.pk, backend="llm")
    assert verdict.status == Verdict.Status.VALID
    tools = [t["function"]["name"] for t in fake.requests[0]["tools"]]
    assert "run_check" not in tools and "read_file" in tools
    refused = json.loads(next(m for m in fake.requests[1]["messages"] if m["role"] == "tool")["content"])
    assert "checks are off" in refused["error"]
    assert not VerdictCheck.objects.exists()


@pytest.mark.parametrize("kind", ["pruned", "shallow"])
def test_a_source_missing_its_old_history_still_serves_the_group(tmp_path, settings, acme, kind):
    # The source has lost the history before the task's base commit (a partial or shallow copy, as
    # companies keep them): fetching it whole fails, but the base commit itself is there.
    tiny = tiny_package(tmp_path / "git")
    base = tiny.commits[1]
    copy = incomplete_copy(tiny, tmp_path / kind, base, kind)
    said = git_fetch_whole(tmp_path / "whole", copy.path)
    assert ("corruption" if kind == "pruned" else "shallow") in said, said
    settings.GAGAR_REPO_URL_TEMPLATE = copy.template
    settings.GAGAR_REPO_CACHE = str(tmp_path / "cache")
    run = make_run(acme)
    task = make_task(run, "tiny-2", repo=tiny.repo, base_commit=base, problem_statement="mean([]) should be 0.0")
    patches = {0: patch_at(tiny, base, fix_mean), 1: ""}
    group = make_group(
        "tiny-2@1", step=make_step(run), task=task, rewards=(1, 0), rollouts={i: {"patch": p} for i, p in patches.items()}
    )
    workspace = load_workspace(group)
    at_base = call_tool(workspace, "read_file", {"path": "README.md"})
    assert "error" not in at_base and "Adds and averages numbers." in json.dumps(at_base)
    fixed = call_tool(workspace, "read_file", {"path": "tiny/calc.py", "rollout": 0})
    assert "error" not in fixed and "if values else 0.0" in json.dumps(fixed)


def git_fetch_whole(repo: Path, source: Path) -> str:
    """What git says fetching every branch of `source` into a new bare `repo`, as the cache once did."""
    repo.mkdir()
    git(repo, "init", "-q", "--bare")
    command = ["git", "fetch", f"file://{source}", "+refs/heads/*:refs/heads/*"]
    done = subprocess.run(command, cwd=repo, env=ENV, capture_output=True, text=True, check=False)
    assert not git(repo, "for-each-ref"), "no branch came"
    return done.stderr
