"""The check sandbox, tried the way a model that read hostile trajectories would try it.

The commands a grader runs come from a model: the sandbox, not the prompt, is the defence. Each
test here runs real bubblewrap (installed by .ci/run) on a real worktree and tries to get out:
the network (our own listener and the PostgreSQL and Redis ports on 127.0.0.1), Unix sockets,
files outside the copy, the worker's environment, a fork bomb, time, memory, CPU and output.
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from grading.repos.sandbox import Bubblewrap, sandbox_from, seccomp_program, tree_bytes
from grading.repos.types import Limits, SandboxUnavailable
from tests.helpers.sandbox import as_worker_user, exposed_dir

REPO = Path(__file__).resolve().parents[3]
UIDS = (64_100, 64_101)  # the tests' own sandbox uids: nothing else on the machine runs as them
AS_ROOT = os.geteuid() == 0
LIMITS = Limits(wall_s=3.0, cpu_s=2, memory_bytes=512 * 1024**2, processes=32, output_bytes=4_000, disk_bytes=16 * 1024**2)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Bubblewrap:
    return Bubblewrap(uids=UIDS, lock_dir=tmp_path_factory.mktemp("sandbox-locks"))


def _package(root: Path) -> Path:
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (root / "README").write_text("a tiny package\n")
    return root


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    # under pytest's tmp dirs (mode 0700, root's): the sandbox uid could not even reach this path
    return _package(tmp_path / "wt")


def _read_only(root: Path) -> None:
    for path in [*root.rglob("*"), root]:
        path.chmod(0o555 if path.is_dir() else 0o444)


def _snapshot(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        out[rel] = "dir" if path.is_dir() else path.read_bytes()
    return out


def _processes(*, uids: tuple[int, ...] = (), token: str = "") -> list[str]:
    """Live processes of `uids` (real uid) or whose command line holds `token`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            status = Path(f"/proc/{name}/status").read_text()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        real_uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
        if real_uid in uids or (token and token in cmdline):
            found.append(f"{name} uid={real_uid} {cmdline[:120]}")
    return found


def test_a_check_that_passes_runs_the_worktrees_tests(sandbox: Bubblewrap, tmp_path: Path) -> None:
    # pytest and its dependencies go into the worktree, so the check needs nothing from this venv
    root = _package(tmp_path / "wt")
    vendor = root / "vendor"
    vendor.mkdir()
    for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py"):
        module = importlib.import_module(name)
        source = Path(module.__file__ or "")
        source = source.parent if source.name == "__init__.py" else source
        if source.is_dir():
            shutil.copytree(source, vendor / source.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, vendor / source.name)
    result = sandbox.run(
        root,
        "PYTHONPATH=/tmp/work/vendor:/tmp/work /usr/bin/python3 -m pytest -q -p no:cacheprovider tests",
        Limits(wall_s=30, cpu_s=30, memory_bytes=1024**3, processes=32, output_bytes=20_000, disk_bytes=64 * 1024**2),
    )
    assert result.exit_status == 0, result.output
    assert "1 passed" in result.output
    assert (result.killed, result.truncated, result.sandbox) == ("", False, "bubblewrap")


def test_the_command_runs_in_a_copy_as_a_non_root_uid(sandbox: Bubblewrap, worktree: Path) -> None:
    result = sandbox.run(worktree, "pwd; id -u; cat README; cat /proc/self/status", LIMITS)
    assert result.exit_status == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "/tmp/work"
    assert int(lines[1]) in (UIDS if AS_ROOT else (os.getuid(),))
    assert int(lines[1]) != 0
    assert lines[2] == "a tiny package"
    assert "NoNewPrivs:\t1" in result.output
    assert "Seccomp:\t2" in result.output
    assert "CapEff:\t0000000000000000" in result.output


def test_no_network_to_services_on_loopback(sandbox: Bubblewrap, worktree: Path) -> None:
    # our own listener on the host's 127.0.0.1 proves the connection would work without the netns
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # reachable from the host
        probe = (
            "import socket\n"
            f"for port in ({port}, 5432, 6379):\n"
            "    try:\n"
            "        socket.create_connection(('127.0.0.1', port), timeout=1).close()\n"
            "        print(port, 'CONNECTED')\n"
            "    except OSError as exc:\n"
            "        print(port, 'refused', exc.errno)\n"
            "try:\n"
            "    socket.create_connection(('1.1.1.1', 53), timeout=1)\n"
            "    print('outside CONNECTED')\n"
            "except OSError as exc:\n"
            "    print('outside refused', exc.errno)\n"
        )
        (worktree / "probe.py").write_text(probe)
        result = sandbox.run(worktree, "/usr/bin/python3 probe.py; cat /proc/net/dev", LIMITS)
    assert result.exit_status == 0, result.output
    assert "CONNECTED" not in result.output
    assert f"{port} refused" in result.output
    assert "5432 refused" in result.output and "6379 refused" in result.output
    assert "outside refused" in result.output
    interfaces = [line.split(":")[0].strip() for line in result.output.splitlines() if ":" in line and "|" not in line]
    assert [i for i in interfaces if i and not i.isdigit() and " " not in i] == ["lo"]


def test_unix_sockets_are_refused_and_run_is_hidden(sandbox: Bubblewrap, worktree: Path) -> None:
    # The netns does not cover sockets on the file system: PostgreSQL's in /run answers any
    # process that can reach it. /run is an empty tmpfs inside, and socket(AF_UNIX) fails anyway.
    name = f"gagar-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("\0" + name)  # abstract: no path, scoped to the network namespace
        listener.listen()
        probe = (
            "import os, socket\n"
            "print('run:', os.listdir('/run'))\n"
            "a, b = socket.socketpair()\n"
            "a.send(b'x'); print('socketpair', b.recv(1))\n"
            "for target in ('\\0' + " + repr(name) + ", '/run/postgresql/.s.PGSQL.5432', '/var/run/mysqld/mysqld.sock'):\n"
            "    try:\n"
            "        s = socket.socket(socket.AF_UNIX); s.connect(target); print('CONNECTED', target)\n"
            "    except OSError as exc:\n"
            "        print('refused', exc.errno)\n"
        )
        (worktree / "probe.py").write_text(probe)
        result = sandbox.run(worktree, "/usr/bin/python3 probe.py", LIMITS)
        with socket.socket(socket.AF_UNIX) as client:
            client.connect("\0" + name)  # the listener was there all along
    assert result.exit_status == 0, result.output
    assert "run: []" in result.output
    assert "socketpair b'x'" in result.output
    assert "CONNECTED" not in result.output
    assert result.output.count("refused 13") == 3  # EACCES from the seccomp filter


def test_nothing_outside_the_copy_can_be_written(sandbox: Bubblewrap) -> None:
    # A worktree outside /tmp, where a sandbox showing the host's root would show it, like the repo cache's.
    with exposed_dir() as base:
        root = _package(base / "wt")
        _read_only(root)  # as RepoView.checkout() leaves its worktrees: the copy is writable all the same
        before = _snapshot(root)
        home = Path.home()
        targets = [f"/etc/{base.name}", f"{REPO}/{base.name}.x", f"{root}/README", f"{root}/new", f"{home}/{base.name}", "/usr/x"]
        targets.append(f"/{base.name}")  # bwrap's own root, where its mount points are
        command = "; ".join(f"(echo pwned > '{t}') 2>/dev/null && echo WROTE '{t}'" for t in targets)
        result = sandbox.run(root, f"{command}; echo changed > README; rm -rf calc tests; ls; touch /tmp/outside-work", LIMITS)
        assert result.exit_status == 0, result.output
        assert "WROTE" not in result.output
        assert result.output.splitlines() == ["README"]  # the copy was changed...
        assert _snapshot(root) == before  # ...the worktree was not
        for target in targets:
            if target != f"{root}/README":
                assert not Path(target).exists(), target
        again = sandbox.run(root, "cat README; ls; ls /tmp", LIMITS)  # a fresh layer each time
        assert again.output.splitlines() == ["a tiny package", "README", "calc", "tests", "work"]


def test_the_layer_is_capped_at_the_worktree_plus_disk_bytes(sandbox: Bubblewrap, worktree: Path) -> None:
    limits = Limits(wall_s=3, cpu_s=2, memory_bytes=512 * 1024**2, processes=32, output_bytes=4_000, disk_bytes=4 * 1024**2)
    fill = "head -c 50000000 /dev/zero > big; ls -l big | cut -d' ' -f5"
    result = sandbox.run(worktree, fill, limits)
    assert "No space left on device" in result.output or "File too large" in result.output
    written = int(result.output.splitlines()[-1])
    assert written <= tree_bytes(worktree) + limits.disk_bytes + 1024**2


def test_the_workers_environment_stays_out(sandbox: Bubblewrap, worktree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-{uuid.uuid4().hex}"
    monkeypatch.setenv("GAGAR_TEST_SECRET", secret)
    monkeypatch.setenv("DJANGO_SECRET_KEY", secret)
    result = sandbox.run(worktree, "env; cat /proc/*/environ; ls /proc", LIMITS)
    assert result.exit_status == 0, result.output
    assert secret not in result.output
    assert "HOME=/tmp" in result.output and "LANG=C.UTF-8" in result.output
    assert str(os.getpid()) not in result.output.split()  # the worker's own process is not even visible


def test_a_fork_bomb_ends_within_the_wall_time_and_leaves_nothing(sandbox: Bubblewrap, worktree: Path) -> None:
    token = f"bomb{uuid.uuid4().hex[:10]}"
    limits = Limits(wall_s=2, cpu_s=2, memory_bytes=256 * 1024**2, processes=32, output_bytes=2_000, disk_bytes=1024**2)
    started = time.monotonic()
    # `exec sleep` keeps the first shell's process (the sandbox's pid 1) alive, without a fork, while the bomb goes on
    result = sandbox.run(worktree, f"bash -c ':(){{ :|:& }};:; exec sleep 30' {token}", limits)
    took = time.monotonic() - started
    assert (result.exit_status, result.killed) == (None, "wall time")
    assert took < limits.wall_s + 1.5
    assert "fork" in result.output  # it did run into the process cap
    assert _processes(uids=UIDS if AS_ROOT else (), token=token) == []
    assert sandbox.run(worktree, "echo fine", LIMITS).output == "fine\n"  # the machine, and the uid, still work


def test_the_process_cap_holds(sandbox: Bubblewrap, worktree: Path) -> None:
    # Children that sleep on: forks stop near `processes` (bwrap, its pid 1 and the shell count too).
    forks = (
        "import os, time\n"
        "n = 0\n"
        "while n < 200:\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "    n += 1\n"
        "print(n)\n"
    )
    script = f"forks{uuid.uuid4().hex[:10]}.py"  # its own name: another run's forks on this machine are not ours
    (worktree / script).write_text(forks)
    started = time.monotonic()
    result = sandbox.run(worktree, f"/usr/bin/python3 {script}", LIMITS)
    assert result.exit_status == 0, result.output
    assert 20 <= int(result.output) < LIMITS.processes
    assert time.monotonic() - started < LIMITS.wall_s  # the sleepers die with the sandbox's pid 1
    assert _processes(uids=UIDS if AS_ROOT else (), token=script) == []


def test_sleeping_past_the_wall_time_is_killed(sandbox: Bubblewrap, worktree: Path) -> None:
    limits = Limits(wall_s=1.0, cpu_s=5, memory_bytes=256 * 1024**2, processes=32, output_bytes=2_000, disk_bytes=1024**2)
    # a duration of its own: a `sleep 60` of anything else on this (shared) machine is not ours
    sleep = f"sleep 60.{uuid.uuid4().int % 10**9:09d}"
    result = sandbox.run(worktree, f"echo going to sleep; {sleep}; echo woke", limits)
    assert (result.exit_status, result.killed) == (None, "wall time")
    assert 1.0 <= result.seconds < 30  # stopped at its wall time, long before the sleep would end
    assert result.output == "going to sleep\n"
    assert _processes(uids=UIDS if AS_ROOT else (), token=sleep) == []


def test_background_processes_do_not_outlive_the_check(sandbox: Bubblewrap, worktree: Path) -> None:
    token = f"bg{uuid.uuid4().hex[:10]}"
    result = sandbox.run(worktree, f"nohup sh -c 'sleep 60' {token} >/dev/null 2>&1 & echo started", LIMITS)
    assert (result.exit_status, result.output) == (0, "started\n")
    assert result.seconds < 30  # the check did not wait for its background sleep
    assert _processes(token=token) == []


def test_huge_output_stops_the_sandbox_and_keeps_head_and_tail(sandbox: Bubblewrap, worktree: Path) -> None:
    limits = Limits(wall_s=30, cpu_s=30, memory_bytes=256 * 1024**2, processes=32, output_bytes=1_000, disk_bytes=1024**2)
    result = sandbox.run(worktree, "yes", limits)
    assert (result.exit_status, result.killed, result.truncated) == (None, "output", True)  # the output, not a clock
    assert result.output_bytes > 16 * 1_000
    assert len(result.output) < 1_100
    # more than the cap but under the stop: kept as head and tail, counted in full, not killed
    result = sandbox.run(worktree, "seq 1 3000 >&2; echo done", limits)
    assert (result.exit_status, result.killed, result.truncated) == (0, "", True)
    assert result.output_bytes == len("".join(f"{i}\n" for i in range(1, 3001))) + 5
    assert result.output.startswith("1\n2\n3\n") and result.output.endswith("2999\n3000\ndone\n")
    assert "bytes of output left out" in result.output


def test_output_is_decoded_with_replacement(sandbox: Bubblewrap, worktree: Path) -> None:
    result = sandbox.run(worktree, r"printf 'ok \377\376 caf\303\251'", LIMITS)
    assert result.output == "ok \ufffd\ufffd café"


def test_memory_beyond_the_cap_fails(sandbox: Bubblewrap, worktree: Path) -> None:
    result = sandbox.run(worktree, "/usr/bin/python3 -c 'x = bytearray(1024**3); print(len(x))'", LIMITS)
    assert result.exit_status == 1
    assert "MemoryError" in result.output


def test_cpu_beyond_the_cap_is_killed(sandbox: Bubblewrap, worktree: Path) -> None:
    # A wall time far past the CPU cap: on a loaded host one CPU second can take several on the clock.
    limits = Limits(wall_s=60, cpu_s=1, memory_bytes=256 * 1024**2, processes=32, output_bytes=2_000, disk_bytes=1024**2)
    result = sandbox.run(worktree, "/usr/bin/python3 -c 'while True: pass'", limits)
    assert (result.exit_status, result.killed) == (None, "cpu time")
    assert 1.0 <= result.seconds < 60


def test_concurrent_checks_get_their_own_uids(sandbox: Bubblewrap, worktree: Path) -> None:
    seen: list[str] = []

    def check() -> None:
        seen.append(sandbox.run(worktree, "id -u; sleep 0.5", LIMITS).output.strip())

    threads = [threading.Thread(target=check) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 2
    if AS_ROOT:
        assert sorted(int(u) for u in seen) == list(UIDS)
    else:
        assert seen == [str(os.getuid())] * 2


def test_a_missing_or_refusing_bwrap_is_a_clear_error(worktree: Path, tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="not installed"):
        Bubblewrap(bwrap="gagar-no-such-bwrap", lock_dir=tmp_path / "locks").run(worktree, "true", LIMITS)
    # `false` stands in for a bwrap whose namespaces the kernel refuses: it fails the probe
    with pytest.raises(SandboxUnavailable, match="user namespaces"):
        Bubblewrap(bwrap="false", lock_dir=tmp_path / "locks").run(worktree, "true", LIMITS)


def test_the_seccomp_program_is_well_formed() -> None:
    program = seccomp_program("x86_64")
    assert program is not None and len(program) % 8 == 0
    assert seccomp_program("aarch64") is not None
    assert seccomp_program("sparc") is None


def test_sandbox_from_reads_the_settings_names() -> None:
    built = sandbox_from({"GAGAR_SANDBOX": "bubblewrap", "GAGAR_SANDBOX_UID": "61000-61003"})
    assert isinstance(built, Bubblewrap) and built.uids == (61000, 61001, 61002, 61003)
    default = sandbox_from({})
    assert isinstance(default, Bubblewrap) and default.uids == (65534,)
    assert sandbox_from({"GAGAR_SANDBOX": "none"}) is None
    hiding = sandbox_from({"GAGAR_REPO_CACHE": "/data/repos", "GAGAR_MEDIA_ROOT": "/data/media", "GAGAR_SWEREX_URL": ""})
    assert isinstance(hiding, Bubblewrap) and hiding.private == ("/data/repos", "/data/media")
    for bad in ({"GAGAR_SANDBOX": "docker"}, {"GAGAR_SANDBOX_UID": "0"}, {"GAGAR_SANDBOX_UID": "70000-60000"}):
        with pytest.raises(ValueError, match="GAGAR_SANDBOX"):
            sandbox_from(bad)


GREEN_CHECKS = ["passes", "cpu_beyond", "sleeping", "concurrent", "fork_bomb", "huge_output"]


@pytest.mark.slow
def test_checks_hold_in_the_grading_workers_gevent_process(sandbox: Bubblewrap) -> None:
    """The grading worker runs checks in a gevent monkey-patched process with GEVENT_NOWAITPID=1
    (docker/start.sh grader, grading.jobs.worker): these tests of the sandbox hold there too."""
    import subprocess
    import sys

    from grading.jobs.worker import GREEN_ENV

    code = (
        "from gevent import monkey; monkey.patch_all()\n"
        "import sys, pytest\n"
        f"sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {__file__!r}, '-k', {' or '.join(GREEN_CHECKS)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[3],
        env={**os.environ, **GREEN_ENV},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and f"{len(GREEN_CHECKS)} passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


@pytest.mark.slow
def test_these_hold_for_a_non_root_worker() -> None:
    """The compose worker is not root (uid 10001): bwrap runs unprivileged, in a user namespace,
    and the sandbox as the worker's own uid. Every test above, again as such a worker."""
    if not AS_ROOT:
        pytest.skip("already running as a non-root user: the tests above were that run")
    # (the gevent rerun starts this venv's python from a process of that user: left to the root run)
    here = str(Path(__file__).relative_to(Path.cwd()))
    done = as_worker_user([here], deselect="not non_root_worker and not gevent_process")
    assert done.returncode == 0 and " failed" not in done.stdout and " passed" in done.stdout, (
        done.stdout[-3000:] + done.stderr[-2000:]
    )
