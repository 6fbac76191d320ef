"""The check sandbox's seccomp filter, tried with the calls that went around it.

A check is a shell command written by a model that read untrusted trajectories. The network
namespace cuts TCP and abstract sockets, not Unix sockets on the file system, so the filter
refuses socket(AF_UNIX). io_uring made the same socket without socket(2): IORING_OP_SOCKET and
IORING_OP_CONNECT reached a listener on the host. The probes are C programs built here with
gcc (tests/hostile/probes/), from this machine's headers, and run in real bubblewrap; the rerun
at the end runs the file again as a non-root worker.
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess
from pathlib import Path

import pytest

from grading.repos.sandbox import Bubblewrap
from grading.repos.types import Limits
from tests.helpers.sandbox import as_worker_user, compile_c, exposed_dir, small_worktree

PROBES = Path(__file__).resolve().parent / "probes"
UIDS = (64_110, 64_111)
LIMITS = Limits(wall_s=10.0, cpu_s=5, memory_bytes=512 * 1024**2, processes=32, output_bytes=8_000, disk_bytes=16 * 1024**2)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Bubblewrap:
    return Bubblewrap(uids=UIDS, lock_dir=tmp_path_factory.mktemp("sandbox-locks"))


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    return small_worktree(tmp_path)


@pytest.fixture
def host_socket():
    """A Unix socket listening on the host, in a folder no hidden path covers, open to any uid."""
    with exposed_dir() as folder, socket.socket(socket.AF_UNIX) as listener:
        path = folder / "s.sock"
        listener.bind(str(path))
        path.chmod(0o777)
        listener.listen()
        listener.setblocking(False)
        yield path, listener


def _connections(listener: socket.socket) -> list[bytes]:
    said = []
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return said
        with conn:
            conn.settimeout(2)
            said.append(conn.recv(100))


def test_io_uring_cannot_open_a_unix_socket_to_the_host(sandbox: Bubblewrap, worktree: Path, host_socket) -> None:
    path, listener = host_socket
    probe = compile_c((PROBES / "uring_connect.c").read_text(), worktree / "uring_connect")
    # On the host, outside the sandbox, the same program does reach the listener (where the
    # kernel offers IORING_OP_SOCKET, 5.19 and later, and io_uring is not switched off).
    on_host = subprocess.run([str(probe), str(path)], capture_output=True, text=True, timeout=30, check=False).stdout
    if "CONNECTED" in on_host:
        assert _connections(listener) == [b"hello from the sandbox\n"]

    result = sandbox.run(worktree, f"./uring_connect {path}", LIMITS)

    assert result.exit_status == 0, result.output
    assert "CONNECTED" not in result.output
    assert result.output == f"io_uring_setup refused errno={errno.ENOSYS}\n"
    assert _connections(listener) == []  # nothing came through


def test_plain_unix_and_other_socket_families_are_refused(sandbox: Bubblewrap, worktree: Path, host_socket) -> None:
    path, listener = host_socket
    (worktree / "probe.py").write_text(
        "import socket\n"
        "for name, family in (('unix', 1), ('packet', 17), ('alg', 38), ('vsock', 40), ('bluetooth', 31)):\n"
        "    try:\n"
        "        s = socket.socket(family, socket.SOCK_STREAM if family in (1, 40) else socket.SOCK_SEQPACKET)\n"
        "    except OSError as exc:\n"
        "        print(name, 'refused', exc.errno)\n"
        "        continue\n"
        "    if family == 1:\n"
        f"        s.connect({str(path)!r})\n"
        "    print(name, 'OPENED')\n"
        "a, b = socket.socketpair(); a.send(b'x'); print('socketpair', b.recv(1))\n"
        "socket.socket(socket.AF_INET).close(); socket.socket(socket.AF_INET6).close(); print('inet ok')\n"
    )
    result = sandbox.run(worktree, "/usr/bin/python3 probe.py", LIMITS)
    assert result.exit_status == 0, result.output
    assert "OPENED" not in result.output
    for name in ("unix", "packet", "alg", "vsock", "bluetooth"):
        assert f"{name} refused {errno.EACCES}" in result.output
    assert "socketpair b'x'" in result.output and "inet ok" in result.output  # what checks do need still works
    assert _connections(listener) == []


def test_kernel_calls_a_check_never_needs_are_refused(sandbox: Bubblewrap, worktree: Path) -> None:
    compile_c((PROBES / "kernel_calls.c").read_text(), worktree / "kernel_calls")
    result = sandbox.run(worktree, "./kernel_calls", LIMITS)
    assert result.exit_status == 0, result.output
    answers = dict(line.split() for line in result.output.splitlines())
    assert set(answers) == {
        "io_uring_setup",
        "io_uring_enter",
        "io_uring_register",
        "bpf",
        "userfaultfd",
        "perf_event_open",
        "keyctl",
        "add_key",
        "request_key",
        "kexec_load",
        "mount",
        "fsopen",
        "open_tree",
        "init_module",
        "open_by_handle_at",
    }
    # ENOSYS, as on a kernel built without them: programs that probe (libuv, tokio) fall back
    assert {name: int(code) for name, code in answers.items() if int(code) != errno.ENOSYS} == {}


@pytest.mark.slow
def test_these_hold_for_a_non_root_worker() -> None:
    """The compose worker is not root: bwrap runs unprivileged, the sandbox as the worker's uid."""
    if os.geteuid() != 0:
        pytest.skip("already running as a non-root user: the tests above were that run")
    done = as_worker_user([str(Path(__file__).relative_to(Path.cwd()))], deselect="not non_root_worker")
    assert done.returncode == 0 and "3 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
