"""Targeted checks: one shell command run in a copy of a worktree, in a sandbox. Pure: no Django.

The command comes from a model that has read untrusted trajectories, so nothing here trusts it:
the sandbox, not the prompt, is the defence. Two runners implement `types.Sandbox`:

- `Bubblewrap` (Debian's `bubblewrap`, 0.8 or later; no overlay needed): new user, pid, net, ipc,
  uts and cgroup namespaces; the host's root read-only; /run, /home, /root and /var/tmp hidden
  behind empty read-only tmpfs; a fresh /tmp tmpfs sized to the worktree plus `Limits.disk_bytes`
  into which the worktree is copied (streamed by `tar` from the host, so the sandbox never sees a
  writable handle on it) and which vanishes with the sandbox; a seccomp filter refusing
  `socket()` of families other than inet, inet6 and netlink (the net namespace cuts TCP and
  abstract sockets, not sockets on the file system), io_uring (which makes sockets without
  `socket()`) and other kernel interfaces a check never needs; a minimal fixed environment;
  rlimits (processes, CPU, address space, file size, no core files); wall time and output
  enforced by the parent. When the worker is root the sandbox
  runs as a non-root uid, one per concurrent slot (chosen under flock), so `RLIMIT_NPROC` binds
  and concurrent checks never share a process budget.
- `SweRex`: the task's own environment image, through a SWE-ReX remote server
  (`swerex-remote`, in a container the deployment starts); wall time and output are enforced
  here too.

`sandbox_from(config)` builds the configured one (docs/workspace.md, "Sandbox").
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import errno
import http.client
import json
import os
import platform
import resource
import secrets
import selectors
import shutil
import signal
import stat
import struct
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from grading.repos.shares import first_free
from grading.repos.types import CheckResult, Limits, RepoError, Sandbox, SandboxUnavailable

# What a command sees of an environment: fixed, never the worker's (which holds its secrets).
SANDBOX_ENV: dict[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "TERM": "dumb",
}
WORKDIR = "/tmp/work"  # where the command runs, on the throwaway layer
DEFAULT_UID = 65534  # nobody; GAGAR_SANDBOX_UID="61000-61007" gives one uid per concurrent slot
# What a check sees of the host, read-only: the system's programs, libraries and configuration,
# nothing else (a link, /bin -> usr/bin on a merged-/usr system, is made as the same link). Not
# the host's root with a denylist: a data folder anywhere else (the repository cache, MEDIA_ROOT,
# a SQLite database beside the code, another service's files) is simply not there.
SYSTEM_DIRS: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# Host directories replaced by an empty read-only tmpfs: sockets (/run holds PostgreSQL's and
# MySQL's), people's and root's files, other programs' scratch space. /tmp is the layer itself.
# Outside SYSTEM_DIRS they would not be there anyway; they stay, empty, for programs that expect them.
DEFAULT_HIDE: tuple[str, ...] = ("/run", "/home", "/root", "/var/tmp", "/var/run", "/mnt", "/media", "/srv")
SHM_BYTES = 16 * 1024**2  # /dev/shm, on top of the layer (POSIX semaphores, multiprocessing)
OUTPUT_STOP_FACTOR = 16  # output past this many times Limits.output_bytes stops the sandbox
SETUP_NOISE_BYTES = 64_000  # what setup may print before the command starts
# Files on the tmpfs layers: bwrap (0.8) sets a tmpfs's size, not its nr_inodes, and an empty file
# takes no page of the size but an inode and a dentry of kernel memory (600,000 took ~490 MB). The
# parent counts the layers' inodes (statvfs through /proc/<pid>/root) every INODE_POLL_S and stops
# the check past the worktree's own + Limits.files: a fast creator overshoots by what it makes in
# one poll (tens of thousands at most).
INODE_POLL_S = 0.05
INODE_SLACK = 64  # the layer's own folders (/tmp/work), the empty /dev/shm
LAYERS = ("tmp", "dev/shm")
PAGE = 4096
_READ = 65536


class _Capture:
    """stdout and stderr as they came: the first and last halves of `cap` bytes kept, all counted."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        keep = self.cap - self.cap // 2
        if data and keep > 0:
            self.tail += data[-keep:]
            if len(self.tail) > keep:
                del self.tail[:-keep]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.truncated:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", errors="replace")
        left_out = self.total - len(self.head) - len(self.tail)
        return f"{head}\n[... {left_out} bytes of output left out ...]\n{tail}"


# A classic-BPF seccomp program, a denylist on top of what the namespaces and the missing
# capabilities already refuse:
# - socket() of any family but AF_INET, AF_INET6 and AF_NETLINK fails with EACCES. The network
#   namespace cuts TCP and abstract sockets, not Unix sockets on the file system (AF_UNIX), nor
#   AF_VSOCK (a VM's host services); AF_ALG, AF_PACKET and the rest are kernel code a check never
#   needs. socketpair() stays allowed (asyncio's self-pipe uses it); it reaches nothing.
# - io_uring fails with ENOSYS, as on a kernel built without it: its IORING_OP_SOCKET and
#   IORING_OP_CONNECT made the Unix socket that socket() is refused, without the call the filter
#   sees. So do other interfaces a check never needs and that hold a long record of kernel bugs
#   reachable without privilege (bpf, userfaultfd, perf_event_open, the key rings), and the
#   mount, module, kexec and file-handle calls. Those last need capabilities the sandbox lacks
#   (inside bwrap's user namespace it has none, and --disable-userns stops it making another), so
#   refusing them here costs nothing and keeps their argument parsing out of reach; ENOSYS lets
#   programs that probe for a call (libuv, tokio, glibc) fall back as they would on an old kernel.
# - any other architecture than the native one (32-bit compat, whose socketcall() hides its
#   arguments; x32) fails outright.
# It is a denylist, not an allowlist: an allowlist wide enough for what checks run (compilers,
# test runners, git, every interpreter) is the few hundred calls of the native table, and one it
# missed breaks checks silently, while the kernel's unprivileged surface beyond those is small.
# None where the architecture is unknown.
_ARCHES = {"x86_64": (0xC000003E, True), "aarch64": (0xC00000B7, False)}
_BPF_LD_ABS, _BPF_JEQ, _BPF_JGE, _BPF_RET = 0x20, 0x15, 0x35, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
# name: (x86_64, aarch64) system call numbers
_SOCKET = (41, 198)
_DENIED_CALLS: dict[str, tuple[int, int]] = {
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "bpf": (321, 280),
    "userfaultfd": (323, 282),
    "perf_event_open": (298, 241),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "name_to_handle_at": (303, 264),
    "open_by_handle_at": (304, 265),
    "acct": (163, 89),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
}
_ALLOWED_FAMILIES = (2, 10, 16)  # AF_INET, AF_INET6, AF_NETLINK (getaddrinfo's AI_ADDRCONFIG, `ip`)


def seccomp_program(machine: str | None = None) -> bytes | None:
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit_arch, x32 = arch
    column = 0 if x32 else 1
    refuse = _RET_ERRNO | errno.EACCES
    missing = _RET_ERRNO | errno.ENOSYS
    prog: list[tuple[int, int, int, int]] = [
        (_BPF_LD_ABS, 0, 0, 4),  # seccomp_data.arch
        (_BPF_JEQ, 1, 0, audit_arch),
        (_BPF_RET, 0, 0, refuse),
        (_BPF_LD_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if x32:
        prog += [(_BPF_JGE, 0, 1, 0x40000000), (_BPF_RET, 0, 0, refuse)]
    for numbers in _DENIED_CALLS.values():
        prog += [(_BPF_JEQ, 0, 1, numbers[column]), (_BPF_RET, 0, 0, missing)]
    families = len(_ALLOWED_FAMILIES)
    prog += [
        (_BPF_JEQ, 0, families + 2, _SOCKET[column]),  # not socket(): on to the final allow
        (_BPF_LD_ABS, 0, 0, 16),  # low word of seccomp_data.args[0] (little-endian): the family
    ]
    for i, family in enumerate(_ALLOWED_FAMILIES):
        prog.append((_BPF_JEQ, families - i, 0, family))  # an allowed family: on to the final allow
    prog += [(_BPF_RET, 0, 0, refuse), (_BPF_RET, 0, 0, _RET_ALLOW)]
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in prog)


def tree_bytes(root: Path) -> int:
    """What a copy of `root` takes on tmpfs: each file rounded up to whole pages."""
    return tree_size(root)[0]


def tree_size(root: Path) -> tuple[int, int]:
    """(bytes on tmpfs, each file rounded up to whole pages; inodes) of a copy of `root`."""
    total = count = 0
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                count += 1
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
                    total += PAGE
                elif stat.S_ISREG(st.st_mode):
                    total += (st.st_size + PAGE - 1) // PAGE * PAGE
                else:
                    total += PAGE
    return total, count


def _processes_of(uid: int) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                count += os.stat(f"/proc/{name}").st_uid == uid
    return count


_probed: dict[tuple[str, int | None], str] = {}
_probe_lock = threading.Lock()


def _namespace_flags() -> list[str]:
    # --as-pid-1: the command is the pid namespace's init, bwrap's direct child. With bwrap's own
    # init in between, bwrap exits on its exit code without reaping it, leaving a zombie of the
    # sandbox uid (counted by RLIMIT_NPROC) to whatever reaps orphans on the host, if anything.
    # When the command's process exits, the kernel kills the rest of the namespace before bwrap
    # can reap it: a check is over when bwrap is.
    return ["--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--as-pid-1"]


def probe(bwrap: str, uid: int | None) -> None:
    """Raise SandboxUnavailable unless bwrap can make its namespaces here as `uid`; cached."""
    key = (bwrap, uid)
    with _probe_lock:
        if key not in _probed:
            argv = [bwrap, *_namespace_flags(), "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "true"]
            ids: dict[str, Any] = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
            try:
                done = subprocess.run(
                    argv, env=SANDBOX_ENV, cwd="/", stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False, **ids
                )
                said = done.stderr.decode("utf-8", errors="replace").strip()
                message = "" if done.returncode == 0 else said or f"exit status {done.returncode}"
            except (OSError, subprocess.TimeoutExpired) as exc:
                message = str(exc)
            if message:
                message = (
                    f"bubblewrap cannot make a sandbox here ({message[:500]}): user namespaces are refused "
                    "(kernel.unprivileged_userns_clone, user.max_user_namespaces, or a container's seccomp/AppArmor "
                    "profile); allow them, or set GAGAR_SANDBOX=swe-rex"
                )
            _probed[key] = message
        message = _probed[key]
    if message:
        raise SandboxUnavailable(message)


class Bubblewrap:
    """Run a check with bubblewrap on this machine (see the module's docstring for what holds).

    `uids`: when the worker is root, the sandbox runs as one of these (never root), one check per
    uid at a time, chosen under an flock in `lock_dir`; give a worker host as many as it runs
    checks at once, and no other process those uids. Ignored when the worker is not root: bwrap
    then runs as the worker's own uid.

    `private`: the folders of every project's data (the repository cache with its worktrees,
    MEDIA_ROOT with the import uploads). Hidden behind an empty tmpfs where they lie inside a
    system directory a check sees (outside those they are not there at all), and a root worker
    refuses to run checks as a uid that owns one of them. A non-root worker's sandbox runs as
    the worker's own uid, which owns them: there the hiding alone keeps them out.
    """

    name = "bubblewrap"

    def __init__(
        self,
        *,
        bwrap: str = "bwrap",
        uids: tuple[int, ...] = (DEFAULT_UID,),
        lock_dir: Path | None = None,
        hide: tuple[str, ...] = DEFAULT_HIDE,
        private: tuple[str, ...] = (),
        system: tuple[str, ...] = SYSTEM_DIRS,
        tar: str = "tar",
    ) -> None:
        if not uids or any(uid <= 0 for uid in uids):
            raise ValueError("sandbox uids must be non-root (> 0)")
        self.bwrap = bwrap
        self.uids = tuple(uids)
        self.lock_dir = lock_dir or Path(tempfile.gettempdir()) / f"gagar-sandbox-{os.getuid()}"
        self.hide = hide
        self.private = tuple(os.path.realpath(p) for p in private if p)
        self.system = system
        self.tar = tar

    def __repr__(self) -> str:
        return f"Bubblewrap(uids={self.uids!r})"

    def _binary(self, name: str) -> str:
        found = shutil.which(name, path=SANDBOX_ENV["PATH"])
        if found is None:
            package = "bubblewrap" if name == self.bwrap else name
            raise SandboxUnavailable(f"{name} is not installed here: apt-get install {package}, or set GAGAR_SANDBOX=swe-rex")
        return found

    def available(self) -> None:
        """Raise SandboxUnavailable unless bwrap and tar are installed and bwrap can make its
        namespaces here as the uid a check would run as (probed once, then cached)."""
        bwrap = self._binary(self.bwrap)
        self._binary(self.tar)
        self._not_an_owner()
        probe(bwrap, self.uids[0] if os.geteuid() == 0 else None)

    def _not_an_owner(self) -> None:
        """SandboxUnavailable when a root worker would run checks as a uid (or group) that owns
        a private folder: every check could read every project's data there."""
        if os.geteuid() != 0:
            return
        for path in self.private:
            try:
                st = os.stat(path)
            except OSError:
                continue
            if st.st_uid in self.uids or (st.st_gid in self.uids and st.st_mode & 0o050):
                raise SandboxUnavailable(
                    f"the sandbox's uid {st.st_uid if st.st_uid in self.uids else st.st_gid} owns {path}, which holds every "
                    "project's data: give GAGAR_SANDBOX_UID uids that own nothing on this host"
                )

    def run(self, root: Path, command: str, limits: Limits) -> CheckResult:
        root = Path(root)
        if not root.is_dir():
            raise RepoError(f"no worktree at {root.name!r} to run a check in")
        bwrap, tar = self._binary(self.bwrap), self._binary(self.tar)
        self._not_an_owner()
        with self._slot(limits.wall_s) as uid:
            probe(bwrap, uid)
            return self._run(bwrap, tar, uid, root, command, limits)

    @contextlib.contextmanager
    def _slot(self, wait_s: float) -> Iterator[int | None]:
        """One of `uids` for this check alone (None when the worker is not root)."""
        if os.geteuid() != 0:
            yield None
            return
        start = os.getpid() % len(self.uids)
        order = self.uids[start:] + self.uids[:start]
        busy = f"all {len(self.uids)} sandbox uids were busy for {wait_s:.0f} s (GAGAR_SANDBOX_UID)"
        with first_free(self.lock_dir, [f"uid-{uid}.lock" for uid in order], max(wait_s, 1.0), busy) as position:
            yield order[position]

    def argv(self, bwrap: str, layer_bytes: int, seccomp_fd: int | None, info_fd: int, marker: str, command: str) -> list[str]:
        args = [bwrap, *_namespace_flags(), "--hostname", "gagar-check"]
        shown: list[str] = []
        for path in self.system:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind", path, path]
                shown.append(os.path.realpath(path))
        args += ["--dev", "/dev", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--proc", "/proc"]
        hidden = [p for p in self.hide if os.path.isdir(p) and not os.path.islink(p)]
        hidden += [p for p in self.private if os.path.isdir(p) and any(_inside(p, top) for top in shown)]
        for path in hidden:
            args += ["--tmpfs", path, "--remount-ro", path]
        args += ["--size", str(layer_bytes), "--tmpfs", "/tmp", "--dir", WORKDIR, "--chdir", WORKDIR]
        args += ["--remount-ro", "/"]  # bwrap's own root, where the mount points were made: no writable tmpfs left there
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += ["--info-fd", str(info_fd), "--", "/bin/sh", "-c", _SETUP, "gagar-check", marker, command]
        return args

    def _run(self, bwrap: str, tar: str, uid: int | None, root: Path, command: str, limits: Limits) -> CheckResult:
        started = time.monotonic()
        deadline = started + limits.wall_s
        tree, inodes = tree_size(root)
        layer = tree + max(limits.disk_bytes, 0) + 1024**2
        nproc = limits.processes if uid is not None else limits.processes + _processes_of(os.getuid())
        marker = f"\n:gagar-check-started:{secrets.token_hex(8)}:\n"
        program = seccomp_program()
        fds: list[int] = []
        seccomp_r: int | None = None
        if program is not None:
            seccomp_r, seccomp_w = os.pipe()
            os.write(seccomp_w, program)
            os.close(seccomp_w)
            fds.append(seccomp_r)
        info_r, info_w = os.pipe()
        fds.append(info_w)
        # The worktree goes in as a tar stream read by the worker's tar: the sandbox needs no
        # permission on the path to it and gets no handle on the host's (writable) mount. The
        # copy is writable by its owner (--mode=u+w) though `checkout()`'s worktrees are read-only.
        packer = subprocess.Popen(
            [tar, "-C", str(root), "--one-file-system", "--numeric-owner", "--mode=u+w", "-cf", "-", "."],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=SANDBOX_ENV,
            cwd="/",
            start_new_session=True,
        )
        assert packer.stdout is not None  # stdout=PIPE
        assert packer.stderr is not None  # stderr=PIPE
        ids: dict[str, Any] = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
        try:
            proc = subprocess.Popen(
                self.argv(bwrap, layer, seccomp_r, info_w, marker, command),
                stdin=packer.stdout,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=SANDBOX_ENV,
                cwd="/",
                start_new_session=True,
                pass_fds=tuple(fds),
                umask=0o022,
                preexec_fn=_rlimits(limits, nproc, layer),  # setrlimit only, run after the uid drop
                **ids,
            )
        except BaseException:
            packer.kill()
            packer.wait()
            raise
        finally:
            for fd in fds:
                os.close(fd)
            packer.stdout.close()
        assert proc.stdout is not None  # stdout=PIPE
        supervisor = _Supervisor(proc, packer, info_r, marker, limits, started, deadline, command)
        supervisor.max_inodes = inodes + max(limits.files, 0) + INODE_SLACK
        return supervisor.wait()


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


_SETUP = (
    f'tar -xpf - -C {WORKDIR} --no-same-owner --numeric-owner || exit 125; exec </dev/null; printf %s "$1"; exec /bin/sh -c "$2"'
)


def _rlimits(limits: Limits, nproc: int, file_bytes: int) -> Callable[[], None]:
    caps = [
        (resource.RLIMIT_NPROC, max(nproc, 1)),
        (resource.RLIMIT_CPU, max(limits.cpu_s, 1)),
        (resource.RLIMIT_AS, max(limits.memory_bytes, 64 * 1024**2)),
        (resource.RLIMIT_FSIZE, max(file_bytes, PAGE)),
        (resource.RLIMIT_CORE, 0),
    ]

    def apply() -> None:
        for which, value in caps:
            hard = value + 1 if which == resource.RLIMIT_CPU else value  # SIGXCPU first, SIGKILL a second later
            resource.setrlimit(which, (value, hard))

    return apply


class _Supervisor:
    """The parent's side of one bwrap run: output, wall time, and a kill that takes the whole sandbox."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        packer: subprocess.Popen[bytes],
        info_fd: int,
        marker: str,
        limits: Limits,
        started: float,
        deadline: float,
        command: str,
    ) -> None:
        self.proc, self.packer, self.info_fd = proc, packer, info_fd
        self.marker = marker.encode()
        self.limits, self.started, self.deadline, self.command = limits, started, deadline, command
        self.capture = _Capture(max(limits.output_bytes, 0))
        self.setup = bytearray()  # before the marker: bwrap's and tar's complaints, if any
        self.began = False
        self.info = bytearray()
        self.child_pidfd: int | None = None
        self.child_pid = 0
        self.max_inodes = 0  # 0: not counted
        self.killed = ""
        self.killed_at = 0.0
        self.child_killed = False
        self.packer_err = bytearray()

    def _on_output(self, data: bytes) -> None:
        if self.began:
            self.capture.feed(data)
            return
        self.setup += data
        at = self.setup.find(self.marker)
        if at >= 0:
            self.began = True
            rest = bytes(self.setup[at + len(self.marker) :])
            del self.setup[at:]
            self.capture.feed(rest)
        elif len(self.setup) > SETUP_NOISE_BYTES:
            self._kill("setup")

    def _on_info(self, data: bytes) -> None:
        if self.child_pidfd is not None or len(self.info) > 4096:
            return  # bwrap said it once; the rest is not bwrap's
        self.info += data
        try:
            child = int(json.loads(self.info)["child-pid"])
        except (ValueError, KeyError, TypeError):
            return
        with contextlib.suppress(OSError):
            self.child_pidfd = os.pidfd_open(child)
            self.child_pid = child

    def _inodes(self) -> int:
        """Inodes in use on the sandbox's writable tmpfs layers, seen through its pid 1's root (once
        the command began: before, that root may still be the host's)."""
        used = 0
        for layer in LAYERS:
            with contextlib.suppress(OSError):
                fs = os.statvfs(f"/proc/{self.child_pid}/root/{layer}")
                used += fs.f_files - fs.f_ffree
        return used

    def _kill(self, why: str) -> None:
        """SIGKILL the sandbox's pid 1, which takes every process of its pid namespace with it, and
        bwrap, still alive, reaps it and exits. Before bwrap has said its child's pid, or when that
        did not end bwrap, bwrap itself (--die-with-parent then kills the child)."""
        if not self.killed:
            self.killed, self.killed_at = why, time.monotonic()
        if self.child_pidfd is not None and not self.child_killed:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.child_pidfd, signal.SIGKILL)
                self.child_killed = True
        if not self.child_killed or time.monotonic() > self.killed_at + 5:
            self._killpg(self.proc)
        self._killpg(self.packer)

    @staticmethod
    def _killpg(proc: subprocess.Popen[bytes]) -> None:
        if proc.returncode is None:  # not reaped yet, so its pid (and group) is still its own
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)

    def wait(self) -> CheckResult:
        assert self.proc.stdout is not None  # stdout=PIPE
        assert self.packer.stderr is not None  # stderr=PIPE
        stop_at = OUTPUT_STOP_FACTOR * max(self.limits.output_bytes, 1)
        readers: dict[int, Callable[[bytes], None]] = {
            self.proc.stdout.fileno(): self._on_output,
            self.info_fd: self._on_info,
            self.packer.stderr.fileno(): self._on_packer_err,
        }
        rusage_cpu = 0.0
        try:
            with selectors.DefaultSelector() as sel:
                for fd in readers:
                    sel.register(fd, selectors.EVENT_READ)
                while readers:
                    timeout = self.deadline - time.monotonic()
                    if timeout <= 0 and not self.killed:
                        self._kill("wall time")
                    if self.max_inodes and self.began and self.child_pid and not self.killed and self._inodes() > self.max_inodes:
                        self._kill("files")
                    # after a kill the writers are gone: what is left drains at once
                    wait = min(max(timeout, 0.05), INODE_POLL_S if self.max_inodes else timeout)
                    for key, _ in sel.select(wait if not self.killed else 1.0):
                        data = os.read(key.fd, _READ)
                        if not data:
                            sel.unregister(key.fd)
                            readers.pop(key.fd)
                            continue
                        readers[key.fd](data)
                    if self.capture.total > stop_at and not self.killed:
                        self._kill("output")
                    if self.killed and time.monotonic() > self.killed_at + 10:
                        break  # a writer that a SIGKILL did not end: give up on its pipe
            rusage_cpu = self._reap()
        finally:
            self._kill_if_alive()
            for stream in (self.proc.stdout, self.packer.stderr):
                stream.close()
            os.close(self.info_fd)
            if self.child_pidfd is not None:
                os.close(self.child_pidfd)
        seconds = time.monotonic() - self.started
        status = self.proc.returncode
        if not self.began and not self.killed:
            said = (bytes(self.setup) + bytes(self.packer_err)).decode("utf-8", errors="replace").strip()
            raise SandboxUnavailable(f"the sandbox could not start or copy the worktree (exit status {status}): {said[:2000]}")
        if self.killed == "setup":
            said = bytes(self.setup[:2000]).decode("utf-8", errors="replace")
            raise SandboxUnavailable(f"the sandbox printed too much before the check started: {said}")
        killed = self.killed
        if not killed and (
            status == 128 + signal.SIGXCPU or (status == 128 + signal.SIGKILL and rusage_cpu >= self.limits.cpu_s)
        ):
            killed = "cpu time"
        return CheckResult(
            command=self.command,
            exit_status=None if killed else status,
            seconds=round(seconds, 3),
            output=self.capture.text(),
            truncated=self.capture.truncated,
            output_bytes=self.capture.total,
            killed=killed,
            sandbox="bubblewrap",
        )

    def _on_packer_err(self, data: bytes) -> None:
        if len(self.packer_err) < 4000:
            self.packer_err += data[:4000]

    def _reap(self) -> float:
        """Wait for bwrap (and the packer) within the wall time; bwrap's CPU time with its reaped descendants."""
        cpu = 0.0
        while True:
            try:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            except ChildProcessError:
                break
            if pid:
                code = os.waitstatus_to_exitcode(status)
                self.proc.returncode = code if code >= 0 else 128 - code
                cpu = usage.ru_utime + usage.ru_stime
                break
            if time.monotonic() > self.deadline or self.killed:
                self._kill(self.killed or "wall time")  # escalates to bwrap itself after 5 s
            time.sleep(0.01)
        try:
            self.packer.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.packer.kill()
            self.packer.wait()
        return cpu

    def _kill_if_alive(self) -> None:
        if self.proc.returncode is None:  # an exception on the way: leave nothing running
            self._kill(self.killed or "error")
            self._killpg(self.proc)
            self.proc.wait()


# The SWE-ReX side, as one POSIX sh script run by the server's /execute: unpack the uploaded tree
# into a directory of its own, run the command there under ulimits and `timeout` (which signals
# the command's whole process group), keep at most `stop` bytes of its merged output, print the
# exit status and the output (base64) on stdout, and remove the directory. The command's output
# never reaches the server's memory beyond `stop` bytes.
_REMOTE = r"""d=$1 cmd=$2 wall=$3 stop=$4 cpu=$5 mem_kb=$6 procs=$7
w="$d/work"
if ! { mkdir -p "$w" && tar -xf "$d/tree.tar" -C "$w" && rm -f "$d/tree.tar"; } >"$d/setup" 2>&1; then
  printf 'setup\n'; head -c 4000 "$d/setup"; rm -rf "$d"; exit 0
fi
cd "$w" || exit 125
{ (
  ulimit -c 0; ulimit -t "$cpu"; ulimit -v "$mem_kb"
  ulimit -u "$procs" 2>/dev/null || ulimit -p "$procs" 2>/dev/null
  exec timeout -k 2 "$wall" sh -c "$cmd"
) </dev/null 2>&1; echo $? >"$d/status"; } | head -c "$stop" >"$d/out"
printf 'status %s\n' "$(cat "$d/status")"
base64 "$d/out" | tr -d '\n'
cd / && rm -rf "$d"
"""


_ANSWER_BYTES = 64 * 1024**2  # what we read of one answer of the server


def _multipart(file: IO[bytes], size: int, fields: Mapping[str, str]) -> tuple[Iterator[bytes], str, int]:
    """A multipart/form-data body streaming `file` as the field "file", with its length."""
    boundary = f"gagar-{secrets.token_hex(16)}"
    head = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    )
    head += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="tree.tar"\r\n'
        "Content-Type: application/x-tar\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()

    def chunks() -> Iterator[bytes]:
        yield head
        while block := file.read(_READ):
            yield block
        yield tail

    return chunks(), f"multipart/form-data; boundary={boundary}", len(head) + size + len(tail)


class SweRex:
    """Run a check in the task's own environment through a SWE-ReX remote server (`swerex-remote`,
    started by the deployment in a container of the task's image; docs/workspace.md).

    Protocol (swe-rex 1.4, HTTP + JSON, the token in the X-API-Key header): GET /is_alive once
    (`available()`, cached), POST /upload the worktree as a tar (multipart: file, target_path, unzip=false),
    POST /execute one `sh -c` script (the command is its argument, never interpolated into it).
    No bash session: a check is one command with its own exit status, and /run_in_session finds
    a command's end by its prompt in the output, which a command can print. Wall time is held
    by `timeout` in the container and by our read timeout; output by `head -c` there and the same
    head-and-tail capture as Bubblewrap here. What else holds is the container's doing (network,
    memory, pids): RLIMIT_NPROC does not bind a server running as root there.
    """

    name = "swe-rex"

    def __init__(self, url: str, token: str, *, scratch: str = "/tmp", tar: str = "tar", margin_s: float = 15.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"GAGAR_SWEREX_URL must be an http(s) URL, not {url!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.scratch = scratch.rstrip("/") or "/tmp"
        self.tar = tar
        self.margin_s = margin_s
        self._alive = False

    def __repr__(self) -> str:
        return f"SweRex({self.url!r})"  # never the token

    def _call(
        self, method: str, path: str, *, read_s: float, body: Any = None, headers: Mapping[str, str] = {}
    ) -> tuple[int, Any]:
        """One request (stdlib http.client: no dependency); (status, parsed JSON or text). Socket
        errors are the caller's; a read past `read_s` is TimeoutError."""
        url = urllib.parse.urlsplit(self.url)
        kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        conn = kind(url.hostname or "", url.port, timeout=30)
        try:
            conn.request(method, url.path + path, body=body, headers={"X-API-Key": self.token, **headers})
            if conn.sock is not None:
                conn.sock.settimeout(read_s)
            response = conn.getresponse()
            data = response.read(_ANSWER_BYTES)
        finally:
            conn.close()
        try:
            return response.status, json.loads(data)
        except ValueError:
            return response.status, data.decode("utf-8", errors="replace")

    def _refusal(self, status: int, answer: Any, what: str) -> SandboxUnavailable:
        if status in (401, 403):
            return SandboxUnavailable(f"the SWE-ReX server at {self.url} refused the token (GAGAR_SWEREX_TOKEN)")
        detail = answer
        if isinstance(answer, dict):
            detail = (answer.get("swerexception") or {}).get("message") or answer.get("detail") or answer
        return SandboxUnavailable(f"the SWE-ReX server at {self.url} failed {what} ({status}): {str(detail)[:500]}")

    def available(self) -> None:
        """Raise SandboxUnavailable unless the server answers GET /is_alive to our token (once, then cached)."""
        if self._alive:
            return
        try:
            status, answer = self._call("GET", "/is_alive", read_s=30)
        except (OSError, http.client.HTTPException) as exc:
            raise SandboxUnavailable(f"the SWE-ReX server at {self.url} cannot be reached: {exc}") from exc
        if status != 200 or not (isinstance(answer, dict) and answer.get("is_alive")):
            raise self._refusal(status, answer, "/is_alive")
        self._alive = True

    def run(self, root: Path, command: str, limits: Limits) -> CheckResult:
        root = Path(root)
        if not root.is_dir():
            raise RepoError(f"no worktree at {root.name!r} to run a check in")
        tar = shutil.which(self.tar, path=SANDBOX_ENV["PATH"])
        if tar is None:
            raise SandboxUnavailable(f"{self.tar} is not installed here")
        here = f"{self.scratch}/gagar-check-{secrets.token_hex(8)}"
        stop = OUTPUT_STOP_FACTOR * max(limits.output_bytes, 1)
        wall = max(limits.wall_s, 0.1)
        args = [here, command, f"{wall:.3f}", str(stop), str(max(limits.cpu_s, 1))]
        args += [str(max(limits.memory_bytes, 64 * 1024**2) // 1024), str(max(limits.processes, 1))]
        self.available()
        started = time.monotonic()
        try:
            with tempfile.TemporaryFile() as packed:
                subprocess.run(
                    [tar, "-C", str(root), "--one-file-system", "--numeric-owner", "--mode=u+w", "-cf", "-", "."],
                    stdout=packed,
                    stderr=subprocess.PIPE,
                    stdin=subprocess.DEVNULL,
                    env=SANDBOX_ENV,
                    check=True,
                    timeout=wall + self.margin_s,
                )
                size = packed.tell()
                packed.seek(0)
                body, content_type, length = _multipart(packed, size, {"target_path": f"{here}/tree.tar", "unzip": "false"})
                status, answer = self._call(
                    "POST", "/upload", read_s=60, body=body, headers={"Content-Type": content_type, "Content-Length": str(length)}
                )
            if status != 200:
                raise self._refusal(status, answer, "the upload")
            payload = {"command": ["sh", "-c", _REMOTE, "gagar-check", *args], "shell": False, "check": False}
            payload["timeout"] = wall + self.margin_s
            status, answer = self._call(
                "POST",
                "/execute",
                read_s=wall + self.margin_s,
                body=json.dumps(payload),
                headers={"Content-Type": "application/json"},
            )
        except TimeoutError:
            return CheckResult(command, None, round(time.monotonic() - started, 3), "", killed="wall time", sandbox=self.name)
        except (OSError, http.client.HTTPException) as exc:
            raise SandboxUnavailable(f"the SWE-ReX server at {self.url} cannot be reached: {exc}") from exc
        except subprocess.CalledProcessError as exc:
            raise SandboxUnavailable(f"could not pack the worktree: {exc.stderr.decode(errors='replace')[:500]}") from exc
        seconds = time.monotonic() - started
        if status != 200 or not isinstance(answer, dict):
            raise self._refusal(status, answer, "the check")
        return self._result(command, limits, answer, seconds, stop)

    def _result(self, command: str, limits: Limits, body: dict[str, Any], seconds: float, stop: int) -> CheckResult:
        said = str(body.get("stdout", ""))
        first, _, rest = said.partition("\n")
        if first == "setup":
            raise SandboxUnavailable(f"the SWE-ReX server could not unpack the worktree: {rest[:2000]}")
        if not first.startswith("status "):
            raise SandboxUnavailable(f"the SWE-ReX server's answer is not a check's: {said[:500]!r} {body.get('stderr', '')!r}")
        try:
            status = int(first.removeprefix("status "))
            output = base64.b64decode(rest, validate=True)
        except (ValueError, binascii.Error) as exc:
            raise SandboxUnavailable(f"the SWE-ReX server's answer is not a check's: {said[:500]!r}") from exc
        capture = _Capture(max(limits.output_bytes, 0))
        capture.feed(output)
        killed = ""
        if len(output) >= stop:
            killed = "output"
        elif status == 124 or (status == 128 + signal.SIGKILL and seconds >= limits.wall_s):
            killed = "wall time"
        elif status == 128 + signal.SIGXCPU:
            killed = "cpu time"
        return CheckResult(
            command=command,
            exit_status=None if killed else status,
            seconds=round(seconds, 3),
            output=capture.text(),
            truncated=capture.truncated,
            output_bytes=capture.total,
            killed=killed,
            sandbox=self.name,
        )


def _uid_range(text: str) -> tuple[int, ...]:
    """'65534' or '61000-61007' (inclusive) as uids."""
    first, _, last = text.strip().partition("-")
    low, high = int(first), int(last or first)
    if low <= 0 or high < low or high - low >= 4096:
        raise ValueError(f"GAGAR_SANDBOX_UID must be a non-root uid or a range low-high, not {text!r}")
    return tuple(range(low, high + 1))


# The folders of every project's data, kept from a bubblewrap check (Bubblewrap's `private`).
PRIVATE_SETTINGS = ("GAGAR_REPO_CACHE", "GAGAR_MEDIA_ROOT")


def sandbox_from(config: Mapping[str, Any] | Any) -> Sandbox | None:
    """The runner that `config` (a mapping or a dataclass with the GAGAR_* names, as settings
    hold them) asks for: GAGAR_SANDBOX = "bubblewrap" (the default), "swe-rex", or "none"/"off"
    (None: checks cannot run here). GAGAR_REPO_CACHE and GAGAR_MEDIA_ROOT name the folders a
    bubblewrap check must never see (PRIVATE_SETTINGS)."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    if not isinstance(config, Mapping):
        config = {name: getattr(config, name) for name in dir(config) if name.startswith("GAGAR_")}

    def get(name: str) -> str:
        value = config.get(name)
        return "" if value is None else str(value).strip()

    kind = (get("GAGAR_SANDBOX") or "bubblewrap").lower()
    if kind in {"none", "off", "0", "false"}:
        return None
    if kind in {"bubblewrap", "bwrap"}:
        private = tuple(p for p in (get(name) for name in PRIVATE_SETTINGS) if p)
        return Bubblewrap(uids=_uid_range(get("GAGAR_SANDBOX_UID") or str(DEFAULT_UID)), private=private)
    if kind in {"swe-rex", "swerex"}:
        url, token = get("GAGAR_SWEREX_URL"), get("GAGAR_SWEREX_TOKEN")
        if not url or not token:
            raise ValueError("GAGAR_SANDBOX=swe-rex needs GAGAR_SWEREX_URL and GAGAR_SWEREX_TOKEN")
        return SweRex(url, token)
    raise ValueError(f"GAGAR_SANDBOX must be bubblewrap, swe-rex or none, not {kind!r}")
