"""One project's check cannot read another project's data.

A check is a shell command the grader model writes after reading untrusted trajectories; it runs
in the bubblewrap sandbox on a copy of one rollout's worktree. The repository cache is shared:
one mirror per repository, holding every project's rollout states as commits, and the worktrees
of every group; MEDIA_ROOT holds every project's import uploads. A check of acme's group ran
`git show` on the mirror and printed project "other"'s patch. Here both projects' states are in
one cache (made where any uid could reach it, as the compose volume is), an upload of "other"
waits in MEDIA_ROOT, and acme's check, run through the grader's own tool with the sandbox built
from the settings, tries git, cat and ls on all of it. The rerun at the end does it all again as
a non-root worker, whose sandbox runs as the uid that owns the cache (the compose set-up).
"""

from __future__ import annotations

import os
import shlex
import stat
import uuid
from pathlib import Path

import pytest
from django.test import override_settings

from grading.grader.tools import call_tool
from grading.models import CheckPolicy
from grading.registry.checks import check_budget_for, sandbox_problem
from grading.registry.workspaces import load_workspace
from tests.factories import make_group, make_run, make_step, make_task
from tests.helpers.gitrepos import patch_at, tiny_package
from tests.helpers.repo_groups import fix_mean
from tests.helpers.sandbox import as_worker_user, exposed_dir

pytestmark = pytest.mark.django_db

UIDS = "64120-64121"


def _group(project, tiny, uid, patch):
    run = make_run(project, grading_deadline_seconds=600)
    task = make_task(run, uid.rsplit("@", 1)[0], repo=tiny.repo, base_commit=tiny.base, problem_statement="mean([])")
    return make_group(uid, step=make_step(run), task=task, rewards=(1, 0), rollouts={0: {"patch": patch}, 1: {"patch": ""}})


@pytest.fixture
def tenants(tmp_path, acme, other_project):
    """acme's group and other's, on the same repository, in one cache; other's state made and
    checked out (as its own grading would), and an upload of other's waiting in MEDIA_ROOT."""
    secret = f"OTHER-PROJECT-SECRET-{uuid.uuid4().hex}"
    tiny = tiny_package(tmp_path / "git")
    with exposed_dir() as data:
        media = data / "media"
        upload = media / "imports" / uuid.uuid4().hex
        upload.mkdir(parents=True)
        (upload / "run.jsonl").write_text(f'{{"note": "{secret}"}}\n')
        with override_settings(
            GAGAR_REPO_URL_TEMPLATE=tiny.template,
            GAGAR_REPO_CACHE=str(data / "repos"),
            MEDIA_ROOT=media,
            GAGAR_SANDBOX="bubblewrap",
            GAGAR_SANDBOX_UID=UIDS,
        ):
            mine = _group(acme, tiny, "tiny-1@1", patch_at(tiny, tiny.base, fix_mean))
            leak = patch_at(tiny, tiny.base, lambda work: (work / "SECRET.txt").write_text(secret + "\n"))
            theirs = _group(other_project, tiny, "tiny-1@1", leak)
            CheckPolicy.objects.create(project=acme, enabled=True, max_checks=4, seconds=60)
            their_view = load_workspace(theirs).repo_view
            assert their_view is not None
            their_tree = their_view.checkout(0)
            their_commit = their_view.commit_at(0)
            yield {
                "secret": secret,
                "mine": mine,
                "acme": acme,
                "data": data,
                "media": media,
                "upload": upload / "run.jsonl",
                "cache": data / "repos",
                "mirror": their_view.mirror,
                "their_tree": their_tree,
                "their_commit": their_commit,
            }


def _acme_check(tenants, command: str) -> dict:
    workspace = load_workspace(tenants["mine"])
    workspace.checks = check_budget_for(tenants["acme"].pk, deadline=None)
    assert workspace.checks is not None, sandbox_problem()
    return call_tool(workspace, "run_check", {"rollout": 0, "command": command})


def _attempt(name: str, command: str) -> str:
    return f"if ( {command} ) >/tmp/out 2>&1; then echo READ {name}; cat /tmp/out; else echo DENIED {name}; fi"


def test_a_check_cannot_read_another_projects_states_uploads_or_worktrees(tenants) -> None:
    mirror, tree, commit = tenants["mirror"], tenants["their_tree"], tenants["their_commit"]
    q = shlex.quote
    attempts = {
        "git-show": f"git -c safe.directory='*' --git-dir={q(str(mirror))} show {commit}",
        "git-log": f"git -c safe.directory='*' --git-dir={q(str(mirror))} log --all --oneline",
        "cat-tree": f"cat {q(str(tree / 'SECRET.txt'))}",
        "ls-tree": f"ls {q(str(tree))}",
        "ls-cache": f"ls -a {q(str(tenants['cache']))}",
        "ls-mirrors": f"ls {q(str(tenants['cache'] / 'mirrors'))}",
        "ls-media": f"ls -a {q(str(tenants['media']))}",
        "cat-upload": f"cat {q(str(tenants['upload']))}",
        "grep-data": f"grep -r OTHER-PROJECT {q(str(tenants['data']))}",
    }
    command = "; ".join(_attempt(name, attempt) for name, attempt in attempts.items())
    result = _acme_check(tenants, command)
    output = result["output"]["text"]
    assert result["exit_status"] == 0, output
    assert tenants["secret"] not in output
    assert [line for line in output.splitlines() if line.startswith(("READ", "DENIED"))] == [
        f"DENIED {name}" for name in attempts
    ]


def test_the_check_still_has_its_own_worktree_with_python_and_git(tenants) -> None:
    command = (
        "ls; python3 -c 'from tiny import mean; print(\"mean:\", mean([]))'; "
        "git init -q . && git add -A && git -c user.name=g -c user.email=g@x commit -qm state && git log --oneline | wc -l"
    )
    result = _acme_check(tenants, command)
    output = result["output"]["text"]
    assert result["exit_status"] == 0, output
    assert "SECRET.txt" not in output and "tiny" in output.split()
    assert "mean: 0.0" in output and output.splitlines()[-1].strip() == "1"


def test_the_cache_is_made_for_its_owner_only(tenants) -> None:
    cache, mirror = tenants["cache"], tenants["mirror"]
    for path in (cache, cache / "mirrors", cache / "trees", mirror, tenants["their_tree"].parent):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, f"{path} is {oct(path.stat().st_mode)}"
    readable = [p for p in mirror.rglob("*") if p.is_file() and p.stat().st_mode & 0o077]
    assert readable == []


def test_a_sandbox_uid_that_owns_the_cache_is_refused(tenants) -> None:
    """A root worker whose GAGAR_SANDBOX_UID owns the cache would let every check read it."""
    assert os.geteuid() == 0  # the non-root rerun leaves this one out: its sandbox is its own uid
    owner = 64_122
    for path in [tenants["cache"], *tenants["cache"].rglob("*")]:
        os.lchown(path, owner, owner)
    with override_settings(GAGAR_SANDBOX_UID=str(owner)):
        problem = sandbox_problem()
        assert "owns" in problem and str(tenants["cache"]) in problem
        assert check_budget_for(tenants["acme"].pk, deadline=None) is None


@pytest.mark.slow
def test_these_hold_for_a_non_root_worker() -> None:
    if os.geteuid() != 0:
        pytest.skip("already running as a non-root user: the tests above were that run")
    here = str(Path(__file__).relative_to(Path.cwd()))
    done = as_worker_user([here], deselect="not non_root_worker and not owns_the_cache")
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
