"""One project's long checks do not starve another project's.

A worker host runs as many checks at once as it has sandbox uids (GAGAR_SANDBOX_UID), handed out
first come, first served. Before, acme's grading conversations could hold every uid with long
checks, and project "other"'s check waited for one until acme's ended. Now each project holds at
most GAGAR_CHECKS_PER_PROJECT places on the host (grading.repos.shares): acme's second long check
is refused at once with a reason, and other's check runs while acme's first is still running.

Real bubblewrap, through the grader's own tool, with the sandbox built from the settings, as root
and again as a non-root worker. The test waits on the lock of acme's place (a readiness marker),
never on time; acme's long check ends at its own wall limit.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
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
from tests.helpers.sandbox import as_worker_user

pytestmark = pytest.mark.django_db(transaction=True)

UIDS = (64140, 64141)
LONG_S = 10  # acme's checks' wall limit: the long check runs this long, then the sandbox stops it


def _group(project, tiny, uid):
    run = make_run(project, grading_deadline_seconds=600)
    task = make_task(run, uid.rsplit("@", 1)[0], repo=tiny.repo, base_commit=tiny.base, problem_statement="mean([])")
    patch = patch_at(tiny, tiny.base, fix_mean)
    return make_group(uid, step=make_step(run), task=task, rewards=(1, 0), rollouts={0: {"patch": patch}, 1: {"patch": ""}})


def check(group, project, command: str) -> dict:
    workspace = load_workspace(group)
    workspace.checks = check_budget_for(project.pk, deadline=None)
    assert workspace.checks is not None, sandbox_problem()
    return call_tool(workspace, "run_check", {"rollout": 0, "command": command})  # a refusal: {"error": why}


def held(path: Path) -> bool:
    """Whether a process holds the flock on `path` now (a check's project place)."""
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


@pytest.fixture
def projects(tmp_path, acme, other_project):
    tiny = tiny_package(tmp_path / "git")
    with override_settings(
        GAGAR_REPO_URL_TEMPLATE=tiny.template,
        GAGAR_REPO_CACHE=str(tmp_path / "repos"),
        GAGAR_SANDBOX="bubblewrap",
        GAGAR_SANDBOX_UID=f"{UIDS[0]}-{UIDS[1]}",
        GAGAR_CHECKS_PER_PROJECT=1,
    ):
        CheckPolicy.objects.create(project=acme, enabled=True, max_checks=4, seconds=LONG_S)
        CheckPolicy.objects.create(project=other_project, enabled=True, max_checks=4, seconds=60)
        yield {"acme": (_group(acme, tiny, "tiny-1@1"), acme), "other": (_group(other_project, tiny, "tiny-2@1"), other_project)}


@pytest.mark.slow
def test_a_projects_long_checks_leave_room_for_another_projects(projects, monkeypatch):
    monkeypatch.setattr("grading.grader.tools.SHARE_WAIT_S", 0.5)
    results: dict[str, dict] = {}

    def acme_long(name: str) -> None:
        results[name] = check(*projects["acme"], f"echo started {name}; sleep {LONG_S * 3}")

    first = threading.Thread(target=acme_long, args=("first",))
    first.start()
    place = Path(tempfile.gettempdir()) / f"gagar-checks-{os.geteuid()}" / f"project-{projects['acme'][1].pk}-0.lock"
    while first.is_alive() and not held(place):  # the readiness marker: acme's first check holds its place
        time.sleep(0.01)
    assert first.is_alive(), results
    second = threading.Thread(target=acme_long, args=("second",))
    second.start()
    second.join(timeout=LONG_S * 3)  # refused at once now; before, it took the host's last uid for LONG_S
    theirs = check(*projects["other"], "echo other ran")
    still_running = first.is_alive()
    first.join(timeout=LONG_S * 6)

    assert "GAGAR_CHECKS_PER_PROJECT" in results["second"].get("error", ""), results["second"]
    assert theirs.get("exit_status") == 0 and "other ran" in theirs["output"]["text"], theirs
    assert still_running, "other's check had to wait until acme's long check ended"
    assert results["first"]["killed"] == "wall time", results["first"]


@pytest.mark.slow
def test_these_hold_for_a_non_root_worker():
    """The same, by pytest as a non-root worker (the compose set-up: bubblewrap unprivileged, no
    uids to hand out), where a project's share is the only thing between its checks and the host."""
    if os.geteuid() != 0:
        pytest.skip("already running as a non-root user: the test above was that run")
    here = str(Path(__file__).relative_to(Path.cwd()))
    done = as_worker_user([here], deselect="not non_root_worker")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
