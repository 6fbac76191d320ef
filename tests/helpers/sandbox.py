"""What the hostile tests of the check sandbox share (grading.repos.sandbox).

- `exposed_dir()`: a scratch directory on the host that a check would see if the sandbox showed it
  the host's file system as it is: outside /tmp (the sandbox's own layer) and every folder it
  hides, open to every uid (0755), like a cache or media root made under the usual umask. The
  non-root rerun hands its user one through GAGAR_TEST_EXPOSED_ROOT, as a root test cannot make
  one inside the checkout for another uid.
- `compile_c(source, out)`: a C probe built with the host's gcc (CI has it: nothing skips).
- `small_worktree(tmp_path)`: a worktree of one README for a check to run in.
- `as_worker_user(test_files, ...)`: the same tests run again by pytest under a non-root uid
  (`setpriv`), the way the compose worker (uid 10001) runs bubblewrap: unprivileged, in a user
  namespace, the sandbox's uid its own.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
EXPOSED_ENV = "GAGAR_TEST_EXPOSED_ROOT"


def _open_up(path: Path) -> None:
    for item in [path, *path.rglob("*")]:
        if item.is_dir() and not item.is_symlink():
            with contextlib.suppress(OSError):
                item.chmod(0o755)


@contextlib.contextmanager
def exposed_dir() -> Iterator[Path]:
    parent = Path(os.environ.get(EXPOSED_ENV) or REPO)
    path = parent / f".sandbox-test-{uuid.uuid4().hex[:10]}"
    path.mkdir(mode=0o755)
    path.chmod(0o755)
    try:
        yield path
    finally:
        _open_up(path)
        shutil.rmtree(path, ignore_errors=True)


def compile_c(source: str, out: Path) -> Path:
    gcc = shutil.which("gcc", path=SYSTEM_PATH)
    assert gcc, "gcc is needed to build the sandbox's C probes (CI installs build-essential)"
    src = out.with_suffix(".c")
    src.write_text(source)
    done = subprocess.run([gcc, "-O1", "-o", str(out), str(src)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out.chmod(0o755)
    return out


def worker_user() -> pwd.struct_passwd:
    """A non-root user to run as: nobody, as on every Debian system."""
    return pwd.getpwnam("nobody")


def as_worker_user(test_files: list[str], *, deselect: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run `test_files` (paths under the checkout) by pytest as `worker_user()`, with an exposed
    directory of that user's own; `deselect` is a -k expression that leaves this rerun out."""
    user = worker_user()
    setpriv = shutil.which("setpriv", path=SYSTEM_PATH)
    assert setpriv, "setpriv (util-linux) is needed to run the tests as another user"
    scratch = REPO / f".sandbox-worker-{uuid.uuid4().hex[:10]}"
    scratch.mkdir(mode=0o755)
    os.chown(scratch, user.pw_uid, user.pw_gid)
    try:
        env = {
            "PATH": os.environ.get("PATH", SYSTEM_PATH),
            "LANG": "C.UTF-8",
            "HOME": user.pw_dir,
            "CI": os.environ.get("CI", ""),
            EXPOSED_ENV: str(scratch),
        }
        argv = [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
        argv += [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", deselect, *test_files]
        return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    finally:
        _open_up(scratch)
        shutil.rmtree(scratch, ignore_errors=True)


def small_worktree(tmp_path: Path) -> Path:
    """A worktree of one README for a check to run in."""
    root = tmp_path / "wt"
    root.mkdir()
    (root / "README").write_text("a worktree\n")
    return root
