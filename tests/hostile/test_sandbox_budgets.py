"""What one check, or one project's checks, may take from the machine they share.

- Files: the sandbox's writable layers are tmpfs, sized in bytes; every file is also an inode
  and a dentry in kernel memory that the size does not count. 600,000 empty files pinned about
  490 MB of kernel memory. A check now stops at the worktree's files plus `Limits.files`.
The rerun at the end runs the file again as a non-root worker.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from grading.repos.sandbox import Bubblewrap
from grading.repos.types import Limits
from tests.helpers.sandbox import as_worker_user, small_worktree

UIDS = (64_130, 64_131)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Bubblewrap:
    return Bubblewrap(uids=UIDS, lock_dir=tmp_path_factory.mktemp("sandbox-locks"))


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    return small_worktree(tmp_path)


MANY_FILES = (
    "import os, sys\n"
    "where, n = sys.argv[1], int(sys.argv[2])\n"
    "os.makedirs(where, exist_ok=True)\n"
    "for i in range(n):\n"
    "    open(f'{where}/{i}', 'w').close()\n"
    "    if i % 5000 == 0:\n"
    "        print('made', i, flush=True)\n"
    "print('made all', n, flush=True)\n"
)


@pytest.mark.parametrize("where", ["/tmp/work/many", "/dev/shm/many"])
def test_two_hundred_thousand_files_are_stopped_within_the_budget(sandbox: Bubblewrap, worktree: Path, where: str) -> None:
    (worktree / "many.py").write_text(MANY_FILES)
    limits = Limits(wall_s=60, cpu_s=60, memory_bytes=512 * 1024**2, processes=32, output_bytes=20_000, disk_bytes=64 * 1024**2)
    assert limits.files <= 100_000
    result = sandbox.run(worktree, f"/usr/bin/python3 many.py {where} 200000", limits)
    assert "made all" not in result.output
    assert result.killed == "files", result.output[-2000:]
    # a line may be cut where the budget killed the writer ("made " without its number)
    made = max(int(m.group(1)) for m in re.finditer(r"^made (\d+)$", result.output, re.MULTILINE))
    assert made <= limits.files + 50_000  # stopped near the budget, not at 200,000 (polled: some overshoot)


def test_a_check_within_the_budget_is_left_alone(sandbox: Bubblewrap, worktree: Path) -> None:
    (worktree / "many.py").write_text(MANY_FILES)
    result = sandbox.run(worktree, "/usr/bin/python3 many.py /tmp/work/some 2000", Limits(wall_s=30, cpu_s=30))
    assert (result.exit_status, result.killed) == (0, ""), result.output
    assert "made all 2000" in result.output


@pytest.mark.slow
def test_these_hold_for_a_non_root_worker() -> None:
    if os.geteuid() != 0:
        pytest.skip("already running as a non-root user: the tests above were that run")
    done = as_worker_user([str(Path(__file__).relative_to(Path.cwd()))], deselect="not non_root_worker")
    assert done.returncode == 0 and " failed" not in done.stdout and " passed" in done.stdout, (
        done.stdout[-3000:] + done.stderr[-2000:]
    )


# Memory: a project admin set the check memory to 64 GiB per process (the page's old ceiling),
# and RLIMIT_AS counts one process only. The operator's GAGAR_CHECK_MEMORY_MB_MAX bounds it.


@pytest.mark.django_db
def test_a_project_admin_cannot_set_check_memory_above_the_operators_ceiling(client, acme, alice, settings) -> None:
    from grading.models import CheckPolicy
    from grading.registry.checks import check_budget_for

    # alice is acme's admin: she may set the check policy, within what the operator allows
    client.force_login(alice)
    form = {"enabled": "on", "max_checks": "4", "seconds": "30"}
    refused = client.post("/projects/acme/checks/", {**form, "memory_mb": str(64 * 1024)})
    assert refused.status_code == 422
    assert b"memory_mb must be a whole number from 64 to 4096" in refused.content  # the default ceiling, 4 GiB
    assert not CheckPolicy.objects.filter(project=acme).exists()

    settings.GAGAR_CHECK_MEMORY_MB_MAX = 8192
    assert client.post("/projects/acme/checks/", {**form, "memory_mb": "8193"}).status_code == 422
    assert client.post("/projects/acme/checks/", {**form, "memory_mb": "8192"}).status_code == 302
    assert CheckPolicy.objects.get(project=acme).memory_mb == 8192

    # a row stored under a higher ceiling (or before there was one) runs at the ceiling
    settings.GAGAR_CHECK_MEMORY_MB_MAX = 2048
    budget = check_budget_for(acme.pk, deadline=None)
    assert budget is not None and budget.limits.memory_bytes == 2048 * 1024**2
    page = client.get("/projects/acme/checks/")
    assert b'max="2048"' in page.content
