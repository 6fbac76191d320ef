"""A project's share of the checks a worker host runs at once. Pure: no Django.

The sandbox's slots (one uid each, grading/repos/sandbox.py) go first come, first served, so
one project's long checks could hold every slot and leave other projects' checks waiting until
they time out. `project_share` holds one of a project's `slots` places on this host while its
check runs: an flock on `<lock_dir>/project-<id>-<n>.lock`, which every worker process on the
host shares and the kernel gives back when a process dies. A check that finds its project's
places taken waits up to `wait_s`, then is refused with a reason; other projects are not held
up by it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from grading.repos.types import SandboxUnavailable


def _own_directory(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise SandboxUnavailable(f"the checks' lock directory {path} is not the worker's own")


@contextlib.contextmanager
def first_free(lock_dir: Path, names: Sequence[str], wait_s: float, busy: str) -> Iterator[int]:
    """Hold the first of the lock files `names` (in `lock_dir`, a directory of the worker's own)
    that no process holds, for as long as the block runs; yields its position in `names`. When
    all stay held for `wait_s` seconds, SandboxUnavailable saying `busy`. An flock: every process
    of the host shares it, and the kernel gives it back when its holder dies."""
    _own_directory(lock_dir)
    deadline = time.monotonic() + max(wait_s, 0.0)
    while True:
        for position, name in enumerate(names):
            fd = os.open(lock_dir / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield position
            finally:
                os.close(fd)
            return
        if time.monotonic() >= deadline:
            raise SandboxUnavailable(busy)
        time.sleep(0.05)


@contextlib.contextmanager
def project_share(lock_dir: Path, project: int, slots: int, wait_s: float) -> Iterator[int]:
    """Hold one of `project`'s `slots` places on this host (yields its number) for as long as
    the block runs; SandboxUnavailable when all stayed taken for `wait_s` seconds."""
    if slots < 1:
        raise ValueError("a project needs at least one place for its checks")
    names = [f"project-{int(project)}-{place}.lock" for place in range(slots)]
    busy = (
        f"this project already runs {slots} checks at once on this worker (GAGAR_CHECKS_PER_PROJECT); "
        "try again when one has finished"
    )
    with first_free(lock_dir, names, wait_s, busy) as place:
        yield place
