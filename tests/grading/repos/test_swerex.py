"""Our side of SWE-ReX's protocol, against the real `swerex-remote` server (swe-rex, the dev extra).

The server runs here unsandboxed, as the tests' user: what would isolate it in a deployment is
the task's container (docs/workspace.md), which cannot be started here. So these commands are
benign; they test what we send (upload, one /execute, the token) and what we make of the answer
(exit status, output capped on both sides, wall time held there and here).
"""

from __future__ import annotations

import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from grading.repos.sandbox import SweRex, sandbox_from
from grading.repos.types import Limits, SandboxUnavailable

LIMITS = Limits(wall_s=3.0, cpu_s=3, memory_bytes=1024**3, processes=256, output_bytes=2_000, disk_bytes=1024**2)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, str]]:
    """(URL, token) of a swerex-remote (its module, as the script runs it) on a free loopback port; its banner names the port."""
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        [sys.executable, "-m", "swerex.server", "--host", "127.0.0.1", "--port", "0", "--auth-token", token],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None  # stderr=PIPE
    banner, port, deadline = b"", None, time.monotonic() + 60
    while port is None and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], deadline - time.monotonic())
        chunk = os.read(proc.stderr.fileno(), 65536) if ready else b""
        if not chunk:
            break
        banner += chunk
        found = re.search(rb"Uvicorn running on http://127\.0\.0\.1:(\d+)", banner)
        port = int(found.group(1)) if found else None
    if port is None:
        proc.kill()
        raise AssertionError(f"swerex-remote did not start: {banner.decode(errors='replace')[-2000:]}")
    # the server logs every request: keep its pipe drained
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}", token
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def runner(server: tuple[str, str], tmp_path: Path) -> SweRex:
    (tmp_path / "scratch").mkdir()
    return SweRex(server[0], server[1], scratch=str(tmp_path / "scratch"))


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    root = tmp_path / "wt"
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (root / "run.sh").chmod(0o755)
    (root / "link").symlink_to("calc/__init__.py")
    (root / "README").write_text("a tiny package\n")
    return root


def test_a_check_runs_in_a_fresh_copy_and_reports_its_exit_status(runner: SweRex, worktree: Path) -> None:
    for path in [*worktree.rglob("*"), worktree]:  # read-only, as RepoView.checkout() leaves them
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & 0o555)
    before = {p: p.read_bytes() for p in worktree.rglob("*") if p.is_file()}
    result = runner.run(worktree, "cat README; ./run.sh; readlink link; echo changed > README; rm -r calc; exit 3", LIMITS)
    assert (result.exit_status, result.killed, result.sandbox) == (3, "", "swe-rex")
    assert result.output == "a tiny package\nran\ncalc/__init__.py\n"  # modes and symlinks survive the copy
    assert {p: p.read_bytes() for p in worktree.rglob("*") if p.is_file()} == before
    assert list(Path(runner.scratch).iterdir()) == []  # the copy is gone once the check is
    again = runner.run(worktree, "cat README; ls", LIMITS)
    assert again.output == "a tiny package\nREADME\ncalc\nlink\nrun.sh\n"


def test_the_command_is_an_argument_not_script_text(runner: SweRex, worktree: Path) -> None:
    # quotes, $(...) and a "status" line of its own cannot change what our script reports
    result = runner.run(worktree, "printf 'status 0\\n'; echo \"$1\" '$(id)' \"'\"; exit 7", LIMITS)
    assert result.exit_status == 7
    assert result.output == "status 0\n $(id) '\n"


def test_sleeping_past_the_wall_time_is_killed_there(runner: SweRex, worktree: Path) -> None:
    limits = Limits(wall_s=1.0, cpu_s=5, memory_bytes=1024**3, processes=256, output_bytes=2_000, disk_bytes=1024**2)
    result = runner.run(worktree, "echo going to sleep; sleep 30; echo woke", limits)
    assert (result.exit_status, result.killed) == (None, "wall time")
    assert result.output == "going to sleep\n"
    assert 1.0 <= result.seconds < 3.0


def test_our_read_timeout_holds_when_the_server_does_not_answer(server: tuple[str, str], worktree: Path, tmp_path: Path) -> None:
    # TERM ignored: the remote `timeout` needs its -k 2 s KILL, later than our wall + 0.5 s margin
    runner = SweRex(server[0], server[1], scratch=str(tmp_path), margin_s=0.5)
    limits = Limits(wall_s=1.0, cpu_s=5, memory_bytes=1024**3, processes=256, output_bytes=2_000, disk_bytes=1024**2)
    result = runner.run(worktree, "trap '' TERM; sleep 6", limits)
    assert (result.exit_status, result.killed) == (None, "wall time")
    assert 1.4 <= result.seconds < 2.8


def test_output_is_capped_there_and_here(runner: SweRex, worktree: Path) -> None:
    result = runner.run(worktree, "yes", LIMITS)
    assert (result.exit_status, result.killed, result.truncated) == (None, "output", True)
    assert result.output_bytes == 16 * LIMITS.output_bytes
    assert len(result.output) < LIMITS.output_bytes + 100
    result = runner.run(worktree, "seq 1 3000 >&2; printf 'caf\\303\\251 \\377'", LIMITS)
    assert (result.exit_status, result.killed, result.truncated) == (0, "", True)
    assert result.output.startswith("1\n2\n3\n") and result.output.endswith("2999\n3000\ncafé \ufffd")


def test_a_wrong_token_or_no_server_is_a_clear_error(server: tuple[str, str], worktree: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="refused the token"):
        SweRex(server[0], "not-the-token").run(worktree, "true", LIMITS)
    with pytest.raises(SandboxUnavailable, match="refused the token"):
        SweRex(server[0], "not-the-token").available()
    SweRex(*server).available()  # the right one is let in
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with pytest.raises(SandboxUnavailable, match="cannot be reached"):
        SweRex(f"http://127.0.0.1:{closed}", "t").run(worktree, "true", LIMITS)


def test_sandbox_from_builds_the_swerex_runner() -> None:
    built = sandbox_from({"GAGAR_SANDBOX": "swe-rex", "GAGAR_SWEREX_URL": "http://rex:8000/", "GAGAR_SWEREX_TOKEN": "t"})
    assert isinstance(built, SweRex) and built.url == "http://rex:8000"
    assert "t" not in repr(built).replace("http", "")
    with pytest.raises(ValueError, match="GAGAR_SWEREX_TOKEN"):
        sandbox_from({"GAGAR_SANDBOX": "swe-rex", "GAGAR_SWEREX_URL": "http://rex:8000"})
