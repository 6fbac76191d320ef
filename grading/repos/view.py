"""One group's repository states, read from the mirror's objects; worktrees only on demand. Pure: no Django.

`GitRepoView(source, repo, base_commit, patches)` is the `RepoView` the grader's tools and the
group page read. Nothing touches the disk until the first call; then the mirror is fetched (or
reused) and every rollout's state is made once (`applied()`, memoised). With `fetch=False` (a page
request) nothing is fetched: a mirror without the base commit is `NotFetched`, and a patch whose
3-way merge needs the source's history (grading.repos.states) fails, unremembered, until a
grader's view fetches it. Reads, listings, greps and diffs go to git's objects at a state's
commit (`git cat-file`, `ls-tree`, `grep`, `diff`), so no file is checked out for them;
`checkout(at)` makes a directory of one state's tree, once, under `<trees>/<key>/<base|r<index>>`,
read-only, for a check to run in. `cleanup()` removes such directories by age, then the least
recently used until under a size.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import os
import selectors
import signal
import stat
import subprocess
import time
from pathlib import Path

from grading.repos.source import RepoSource, flocked, git_env, remove_tree, tree_bytes
from grading.repos.states import apply_all, path_problem
from grading.repos.types import BASE, Applied, At, Entry, GrepMatch, GrepResult, PathRefused, RepoError

MAX_READ_BYTES = 2 * 1024**2
MAX_DIFF_BYTES = 1024**2
MAX_GREP_BYTES = 4 * 1024**2  # of git grep's output read before it is stopped
MAX_GREP_LINE_CHARS = 1_000  # a matching line longer than this is cut
MAX_PATTERN_CHARS = 1_000
GREP_SECONDS = 5.0
MAX_CONTEXT = 100
KINDS = {b"040000": "directory", b"120000": "symlink", b"160000": "submodule"}


def clean_path(path: str) -> str:
    """`path` as a path inside the tree ("" for its root); PathRefused for one that leaves it or names .git."""
    if not isinstance(path, str):
        raise PathRefused("a path must be text")
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    path = path.rstrip("/")
    if path in {"", "."}:
        return ""
    if any(ord(ch) < 32 for ch in path):
        raise PathRefused("a path with a control character is not a path in the repository")
    problem = path_problem(path)
    if problem:
        raise PathRefused(f"{problem} is not a path in the repository")
    return "/".join(part for part in path.split("/") if part)


def group_key(repo: str, base_commit: str, patches: dict[int, str]) -> str:
    """A group's worktree directory name: the same repository, base and patches make the same key."""
    digest = hashlib.sha256(f"{repo}\0{base_commit}\0".encode())
    for index, patch in sorted(patches.items()):
        digest.update(f"{index}\0".encode() + hashlib.sha256((patch or "").encode("utf-8", "replace")).digest())
    return digest.hexdigest()[:20]


class GitRepoView:
    """The `RepoView` of one group (see the module's docstring)."""

    def __init__(
        self,
        source: RepoSource,
        repo: str,
        base_commit: str,
        patches: dict[int, str],
        *,
        trees_dir: Path | None = None,
        key: str | None = None,
        fetch: bool = True,
    ) -> None:
        self.source = source
        self.fetch = fetch
        self.repo = repo
        self.base_commit = base_commit
        self.patches = dict(patches)
        self.trees_dir = Path(trees_dir) if trees_dir is not None else source.trees_dir
        self.key = key or group_key(repo, base_commit, self.patches)
        if not self.key or "/" in self.key or self.key.startswith("."):
            raise ValueError(f"a worktree key must be a plain directory name, not {self.key!r}")
        self._mirror: Path | None = None
        self._applied: dict[int, Applied] | None = None
        self.grep_seconds = GREP_SECONDS

    # -- states -----------------------------------------------------------------------

    @property
    def mirror(self) -> Path:
        if self._mirror is None:
            if self.fetch:
                self._mirror = self.source.mirror(self.repo, self.base_commit)
            else:
                self._mirror = self.source.cached(self.repo, self.base_commit)
        return self._mirror

    def applied(self) -> dict[int, Applied]:
        if self._applied is None:
            history = (lambda: self.source.fetch_history(self.repo)) if self.fetch else None
            self._applied = apply_all(self.source, self.mirror, self.base_commit, self.patches, history=history)
        return dict(self._applied)

    def commit_at(self, at: At) -> str:
        """The commit of state `at`; RepoError for a rollout not in the group or whose patch did not apply."""
        if at == BASE:
            self.mirror  # noqa: B018 (fetched, and the base commit checked, on first use)
            return self.base_commit
        if isinstance(at, bool) or not isinstance(at, int):
            raise RepoError(f"a state is 'base' or a rollout's index, not {str(at)[:40]!r}")
        applied = self.applied()
        if at not in applied:
            raise RepoError(f"rollout {at} is not in this group (its rollouts: {', '.join(map(str, sorted(applied)))})")
        state = applied[at]
        if state.commit is None:
            raise RepoError(f"rollout {at}'s patch did not apply: {state.error}")
        return state.commit

    def _git(self, args: builtins.list[str], *, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return self.source.git(self.mirror, args, env=git_env(GIT_LITERAL_PATHSPECS="1"), check=check)

    def _entry(self, commit: str, path: str) -> tuple[bytes, bytes, str, int | None]:
        """(mode, type, object id, size) of `path` at `commit`; RepoError when it is not there."""
        if path == "":
            tree = self._git(["rev-parse", f"{commit}^{{tree}}"]).stdout.decode().strip()
            return b"040000", b"tree", tree, None
        done = self._git(["ls-tree", "-l", "-z", "--full-tree", commit, "--", path])
        for record in done.stdout.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            if name.decode("utf-8", "surrogateescape") == path:
                mode, kind, oid, size = meta.split()
                return mode, kind, oid.decode(), int(size) if size.isdigit() else None
        raise RepoError(f"there is no {path!r} in the repository at this state")

    # -- RepoView ---------------------------------------------------------------------

    def read(self, at: At, path: str) -> bytes:
        path = clean_path(path)
        if not path:
            raise RepoError("the repository's root is a directory; list it instead")
        commit = self.commit_at(at)
        _mode, kind, oid, size = self._entry(commit, path)
        if kind == b"tree":
            raise RepoError(f"{path!r} is a directory; list it instead")
        if kind != b"blob":
            raise RepoError(f"{path!r} is a submodule (another repository), not a file")
        if size is not None and size > MAX_READ_BYTES:
            raise RepoError(f"{path!r} is {size / 1024**2:,.1f} MB, more than the {MAX_READ_BYTES // 1024**2} MB a read returns")
        return self._git(["cat-file", "blob", oid]).stdout

    def list(self, at: At, path: str = "") -> list[Entry]:
        path = clean_path(path)
        commit = self.commit_at(at)
        _mode, kind, oid, _size = self._entry(commit, path)
        if kind != b"tree":
            raise RepoError(f"{path!r} is not a directory")
        done = self._git(["ls-tree", "-l", "-z", oid])
        entries = []
        for record in done.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, _kind, _oid, size = meta.split()
            entries.append(
                Entry(
                    name=name.decode("utf-8", "replace"),
                    kind=KINDS.get(mode, "file"),  # type: ignore[arg-type]
                    size=int(size) if size.isdigit() else None,
                )
            )
        return sorted(entries, key=lambda e: e.name)

    def grep(
        self, at: At, pattern: str, *, path: str = "", fixed: bool = False, ignore_case: bool = False, max_matches: int = 200
    ) -> GrepResult:
        if not pattern:
            raise RepoError("an empty pattern matches every line; say what to look for")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise RepoError(f"a pattern of {len(pattern)} characters is longer than the {MAX_PATTERN_CHARS} allowed")
        if any(ord(ch) < 32 and ch != "\t" for ch in pattern):
            raise RepoError("a pattern may not hold control characters or line breaks")
        path = clean_path(path)
        commit = self.commit_at(at)
        max_matches = max(1, min(int(max_matches), 10_000))
        args = ["grep", "-n", "-I", "-z", "--no-color", "--full-name", f"--max-count={max_matches + 1}"]
        args += ["-F"] if fixed else ["-E"]
        if ignore_case:
            args.append("-i")
        args += ["-e", pattern, commit, "--"]
        if path:
            args.append(path)
        return self._bounded_grep(args, commit, max_matches)

    def _bounded_grep(self, args: builtins.list[str], commit: str, max_matches: int) -> GrepResult:
        command = ["git", "-c", "core.hooksPath=" + os.devnull, "--git-dir", str(self.mirror), *args]
        deadline = time.monotonic() + self.grep_seconds
        matches: builtins.list[GrepMatch] = []
        truncated = timed_out = False
        buffer = b""
        read = 0
        prefix = f"{commit}:".encode()
        with subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=git_env(GIT_LITERAL_PATHSPECS="1"),
            start_new_session=True,
        ) as proc:
            assert proc.stdout is not None  # a pipe (stdout=PIPE above)
            assert proc.stderr is not None  # a pipe (stderr=PIPE above)
            selector = selectors.DefaultSelector()
            selector.register(proc.stdout, selectors.EVENT_READ)
            done = False
            while not done:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = truncated = True
                    break
                if not selector.select(timeout=left):
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                read += len(chunk)
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    name, _, rest = line.partition(b"\0")
                    number, _, text = rest.partition(b"\0")
                    if name.startswith(prefix):
                        name = name[len(prefix) :]
                    if len(matches) >= max_matches:
                        truncated = done = True
                        break
                    matches.append(
                        GrepMatch(
                            path=name.decode("utf-8", "replace"),
                            line=int(number) if number.isdigit() else 0,
                            text=text[: MAX_GREP_LINE_CHARS * 4].decode("utf-8", "replace")[:MAX_GREP_LINE_CHARS],
                        )
                    )
                if read > MAX_GREP_BYTES and not done:
                    truncated = done = True
                    if b"\n" not in buffer and len(buffer) > MAX_GREP_BYTES:
                        buffer = b""
            selector.close()
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            stderr = proc.stderr.read(4000)
        if proc.returncode not in (0, 1) and not (truncated or timed_out) and proc.returncode > 0:
            message = stderr.decode("utf-8", "replace").strip()[:500]
            raise RepoError(f"git grep failed: {message}")
        return GrepResult(matches=matches, truncated=truncated, timed_out=timed_out)

    def diff(self, path: str, a: At, b: At, *, context: int = 3) -> str:
        path = clean_path(path)
        first, second = self.commit_at(a), self.commit_at(b)
        context = max(0, min(int(context), MAX_CONTEXT))
        args = ["diff", "-M", "--no-color", "--no-ext-diff", "--no-textconv", f"-U{context}", first, second, "--"]
        if path:
            args.append(path)
        text = self._git(args).stdout
        if len(text) > MAX_DIFF_BYTES:
            cut = text[:MAX_DIFF_BYTES].decode("utf-8", "replace")
            return cut + f"\n[the diff is cut here: {len(text):,} bytes in all, {MAX_DIFF_BYTES:,} shown]\n"
        return text.decode("utf-8", "replace")

    def checkout(self, at: At) -> Path:
        commit = self.commit_at(at)
        name = "base" if at == BASE else f"r{at}"
        group = self.trees_dir / self.key
        target = group / name
        self.source.make_private()
        with flocked(group / f".{name}.lock"):
            (group / ".mirror").write_text(self.mirror.name[: -len(".git")] + "\n")
            if target.is_dir() and not target.is_symlink():
                os.utime(target)
                return target
            scratch = group / f".{name}.tmp-{os.getpid()}"
            remove_tree(scratch)
            scratch.mkdir()
            try:
                env = git_env(GIT_INDEX_FILE=str(group / f".{name}.index"), GIT_WORK_TREE=str(scratch))
                self.source.git(self.mirror, ["read-tree", commit], env=env)
                self.source.git(self.mirror, ["checkout-index", "--all", "--force"], env=env, timeout=self.source.fetch_timeout)
                (group / f".{name}.index").unlink(missing_ok=True)
                make_read_only(scratch)
                scratch.rename(target)
            except BaseException:
                (group / f".{name}.index").unlink(missing_ok=True)
                remove_tree(scratch)
                raise
        return target


def make_read_only(root: Path) -> None:
    """Take the write bits off every file and directory under `root`, never through a link."""
    for folder, dirs, files in os.walk(root, topdown=False):
        for name in files:
            full = os.path.join(folder, name)
            st = os.lstat(full)
            if stat.S_ISREG(st.st_mode):
                os.chmod(full, stat.S_IMODE(st.st_mode) & ~0o222)
        for name in dirs:
            full = os.path.join(folder, name)
            st = os.lstat(full)
            if stat.S_ISDIR(st.st_mode):
                os.chmod(full, stat.S_IMODE(st.st_mode) & ~0o222)
    os.chmod(root, 0o555)


def cleanup(trees_dir: Path, *, max_age_s: float, max_bytes: int) -> list[Path]:
    """Remove worktrees (`<trees>/<key>/<name>`) unused for `max_age_s`, then the least recently used until
    they hold at most `max_bytes`; one being made or in use by `checkout` is left alone. The paths removed."""
    trees_dir = Path(trees_dir)
    if not trees_dir.is_dir():
        return []
    now = time.time()
    found: list[tuple[float, Path, int]] = []
    for group in trees_dir.iterdir():
        if not group.is_dir() or group.is_symlink():
            continue
        for tree in group.iterdir():
            if tree.name.startswith(".") or tree.is_symlink() or not tree.is_dir():
                continue
            found.append((tree.stat().st_mtime, tree, tree_bytes(tree)))
    removed: list[Path] = []
    total = sum(size for _, _, size in found)
    for used, tree, size in sorted(found, key=lambda item: item[0]):
        if now - used <= max_age_s and total <= max_bytes:
            break
        with flocked(tree.parent / f".{tree.name}.lock", blocking=False) as got:
            if not got:
                continue
            remove_tree(tree)
        total -= size
        removed.append(tree)
    for group in {tree.parent for tree in removed}:
        if not any(p for p in group.iterdir() if not p.name.startswith(".")):
            for leftover in group.iterdir():
                leftover.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                group.rmdir()
    return removed
