"""A task's `repo` resolved through a URL template into a bare mirror cache. Pure: no Django.

`RepoSource(url_template, cache, budget_bytes)` keeps one bare repository per repository under
`<cache>/mirrors/<safe name>.git` (a "mirror", though it holds only what was asked for), and
fetches into it the base commits tasks need, by id: `git fetch --depth 1 <url> <sha>:refs/gagar/
commits/<sha>`, the commit and its tree, not the history (several commits of one repository go
in one fetch). Git servers send a commit by id (protocol v2 always; v0 when the server allows
it), and so does a source whose old history is incomplete (a shallow or partial copy). A server
that refuses it ("Server does not allow request for unadvertised object") or does not have it
gets the whole fetch instead, its branches and tags; a commit still missing then is
`MissingCommit`. The history is fetched too (`fetch_history`) when a patch written at another
commit needs file versions from it for a 3-way merge.

The mirrors (with the worktrees made from them, `<cache>/trees`) are held under `budget_bytes`:
whatever writes into the cache (a fetch, a patch's objects) first reserves room under a lock
every process shares (`reserve`), evicting the least recently used mirrors to make it, and is
refused when the room is not there. What counts is what is on disk: a fetch of one commit of a
repository bigger than the budget fits when that commit does.

Every git command runs here through `run_git`: a timeout, no terminal prompt, no hooks,
the system and global git configuration ignored (so a worker's `apply.whitespace` or
`core.autocrlf` cannot change a state) except for fetches, which may need the worker's
credential helpers; whatever git says back is bounded, and every URL in it loses its user,
password, query string and fragment (`https://***@host/path?***`), as do the parts of the
template that may be credentials wherever they appear.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from grading.repos.types import FetchRefused, MissingCommit, NotFetched, OverBudget, RepoError, UnknownRepo

DEFAULT_URL_TEMPLATE = "https://github.com/{repo}.git"
DEFAULT_BUDGET_BYTES = 20 * 1024**3
MAX_REPO_CHARS = 200
MAX_MESSAGE_CHARS = 2_000  # of git's stderr kept in an error's message
REPO_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
FETCH_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")  # the whole repository
COMMIT_REFS = "refs/gagar/commits/"  # a commit fetched by id is kept under a ref of its own
# What git says when a source will not send a commit by id: the server refuses such requests
# (protocol v0 without uploadpack.allowAnySHA1InWant or allowReachableSHA1InWant), or lacks it
# (v2), or it is not on a ref it advertises (v0). The whole fetch is tried then.
REFUSED_BY_ID = ("unadvertised object", "not our ref", "couldn't find remote ref", "no such remote ref")
HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
FULL_ID_LENGTHS = (40, 64)  # SHA-1, SHA-256: only a whole id can be asked for
MIN_RESERVE_BYTES = 1024**2  # a fetch reserves a sixteenth of the budget at a time, at least this
WATCH_SECONDS = 0.1  # how often a running fetch's size is checked against what it reserved
_URL = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,30}://)([^\s'\"<>`]*)")


def _redact_url(match: re.Match[str]) -> str:
    scheme, rest = match.group(1), match.group(2)
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i != -1), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    query = min((i for i in (tail.find("?"), tail.find("#")) if i != -1), default=-1)
    if query != -1:
        tail = tail[: query + 1] + "***"
    return scheme + authority + tail


def redact_urls(text: str) -> str:
    """`text` with every URL's user, password, query string and fragment masked:
    `fatal: unable to access 'https://bot:TOKEN@host/a.git?token=T/'` says
    `fatal: unable to access 'https://***@host/a.git?***'`."""
    return _URL.sub(_redact_url, text)


def bounded(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` cut to `limit` characters (its end kept: git's last lines say why), URL credentials
    masked (before the cut, so no part of a URL is left unmasked by it)."""
    text = redact_urls(text.strip())
    if len(text) > limit:
        text = "…" + text[-limit:]
    return text


def template_secrets(template: str) -> tuple[str, ...]:
    """The parts of a URL template that may be credentials (its user, password, query string and
    fragment, and each query value), as written and percent-decoded: masked wherever they appear,
    since git may quote the URL in another form (a file:// template as a path)."""
    try:
        parts = urllib.parse.urlsplit(template)
    except ValueError:
        return ()
    found = [parts.username or "", parts.password or "", parts.query, parts.fragment]
    found += [value for _key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)]
    found += [urllib.parse.unquote(item) for item in found]
    return tuple(sorted({item for item in found if len(item) >= 4 and "{repo}" not in item}, key=len, reverse=True))


def git_env(*, isolated: bool = True, **extra: str) -> dict[str, str]:
    """The environment every git command runs in (see the module's docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_ASKPASS="",
        SSH_ASKPASS="",
        GIT_SSH_COMMAND="ssh -o BatchMode=yes",
        GIT_CONFIG_NOSYSTEM="1",
        LC_ALL="C",
        LANG="C",
    )
    if isolated:
        env["GIT_CONFIG_GLOBAL"] = os.devnull
    env.update(extra)
    return env


def run_git(
    git_dir: Path | None,
    args: Sequence[str],
    *,
    timeout: float,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
    config: Sequence[str] = (),
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git <args>` on the bare repository `git_dir`; RepoError on a non-zero exit (with `check`) or the timeout."""
    command = ["git", "-c", "core.hooksPath=" + os.devnull, "-c", "core.fsmonitor=false"]
    for item in config:
        command += ["-c", item]
    if git_dir is not None:
        command += ["--git-dir", str(git_dir)]
    command += list(args)
    try:
        done = subprocess.run(
            command, input=input, capture_output=True, timeout=timeout, env=env if env is not None else git_env(), check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise RepoError(f"git {args[0]} took longer than {timeout:g} s and was stopped") from exc
    if check and done.returncode != 0:
        raise RepoError(f"git {args[0]} failed: {bounded(done.stderr.decode('utf-8', 'replace'))}")
    return done


def tree_bytes(path: Path) -> int:
    """Bytes on disk under `path` (files and links themselves, never followed)."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in files + dirs:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def remove_tree(path: Path) -> None:
    """Delete `path` (a read-only worktree included), never following a link out of it."""
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return
    for root, dirs, _files in os.walk(path):
        for name in dirs:
            full = os.path.join(root, name)
            st = os.lstat(full)
            if not os.path.islink(full):
                os.chmod(full, (st.st_mode & 0o7777) | 0o700)
    os.chmod(path, 0o700)
    shutil.rmtree(path)


def private_dir(path: Path, *, tighten: bool = False) -> Path:
    """`path` as a directory, every folder of it made here made for its owner only (0700): the
    cache holds every project's rollout states, and no other uid (a check's sandbox least of all)
    may read them. `tighten`: an existing `path` of ours loses its group and other bits too (a
    cache root made before, or a volume made 0750)."""
    missing = []
    for folder in (path, *path.parents):
        if os.path.lexists(folder):
            break
        missing.append(folder)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    if tighten and not missing:
        st = os.stat(path)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
    return path


@contextlib.contextmanager
def flocked(lock_path: Path, *, blocking: bool = True) -> Iterator[bool]:
    """Hold an exclusive flock on `lock_path` (yields False when `blocking` is off and it is taken)."""
    private_dir(lock_path.parent)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def validate_repo(repo: str) -> str:
    """The task's repository name if it reads as `owner/name` (a few more segments allowed); UnknownRepo otherwise."""
    if not isinstance(repo, str) or not repo.strip():
        raise UnknownRepo("the task names no repository")
    if len(repo) > MAX_REPO_CHARS:
        raise UnknownRepo(f"the task's repository name is {len(repo)} characters long (at most {MAX_REPO_CHARS})")
    segments = repo.split("/")
    shown = repo.encode("unicode_escape").decode("ascii")[:100]
    if len(segments) < 2 or len(segments) > 4:
        raise UnknownRepo(f"the task's repository {shown!r} is not of the form owner/name")
    for segment in segments:
        if not segment or segment in {".", ".."} or segment[0] in "-." or not set(segment) <= REPO_CHARS:
            raise UnknownRepo(
                f"the task's repository {shown!r} is not a repository name "
                "(letters, digits, '.', '_', '-' in owner/name, none starting with '-' or '.')"
            )
    return repo


def is_commit_id(commit: str) -> bool:
    """Whether `commit` may name a commit: 1 to 64 hex digits (nothing git could read as an option or a range)."""
    return isinstance(commit, str) and 0 < len(commit) <= 64 and set(commit) <= HEX_DIGITS


def is_local_template(template: str) -> bool:
    return template.startswith(("file://", "/", "./"))


@dataclass(frozen=True)
class RepoSource:
    """Where repositories come from and where their mirrors are kept.

    `url_template` names the repository with `{repo}`: an https URL (the default), an ssh URL,
    `file:///srv/git/{repo}.git` or a local path `/srv/git/{repo}`. `fetch_timeout` bounds one
    fetch, `git_timeout` every other git command.
    """

    cache: Path
    url_template: str = DEFAULT_URL_TEMPLATE
    budget_bytes: int = DEFAULT_BUDGET_BYTES
    fetch_timeout: float = 600.0
    git_timeout: float = 60.0

    def __post_init__(self) -> None:
        if "{repo}" not in self.url_template:
            shown = self.redact(self.url_template)
            raise ValueError(f"the repository URL template {shown!r} has no {{repo}}")
        object.__setattr__(self, "cache", Path(self.cache))

    # -- names -------------------------------------------------------------------------

    @property
    def mirrors_dir(self) -> Path:
        return self.cache / "mirrors"

    @property
    def trees_dir(self) -> Path:
        return self.cache / "trees"

    @property
    def reserved_dir(self) -> Path:
        return self.cache / "reserved"

    @property
    def local(self) -> bool:
        return is_local_template(self.url_template)

    def redact(self, text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
        """`text` bounded, with URL credentials and anything of this template that may be one masked."""
        text = bounded(text, limit)
        for secret in template_secrets(self.url_template):
            text = text.replace(secret, "***")
        return text

    def url_for(self, repo: str) -> str:
        """The URL (or local path) `repo` is fetched from; UnknownRepo for a name that is not a repository's."""
        return self.url_template.replace("{repo}", validate_repo(repo))

    def safe_name(self, repo: str) -> str:
        """`owner+name-<8 hex>`: a directory name per repository (the digest keeps `a_b/c` and `a/b_c` apart)."""
        repo = validate_repo(repo)
        digest = hashlib.sha256(repo.encode()).hexdigest()[:8]
        return f"{repo.replace('/', '+')}-{digest}"

    def mirror_path(self, repo: str) -> Path:
        return self.mirrors_dir / f"{self.safe_name(repo)}.git"

    def fetches(self, repo: str) -> int:
        """How many fetches this cache has made of `repo` (the first one included); 0 before any."""
        return self.fetches_by_name(self.safe_name(repo))

    def make_private(self) -> None:
        """The cache root, and its mirrors and trees where they are, for the worker's uid only (see
        `private_dir`); what is made inside later is made so."""
        private_dir(self.cache, tighten=True)
        for folder in (self.mirrors_dir, self.trees_dir):
            if folder.is_dir():
                private_dir(folder, tighten=True)

    # -- git --------------------------------------------------------------------------

    def git(
        self,
        git_dir: Path,
        args: Sequence[str],
        *,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """A local git command on a mirror (isolated configuration, `git_timeout`)."""
        return run_git(git_dir, args, timeout=timeout or self.git_timeout, input=input, env=env, check=check)

    def has_commit(self, git_dir: Path, commit: str) -> bool:
        if not is_commit_id(commit):
            return False
        done = self.git(git_dir, ["cat-file", "-e", f"{commit}^{{commit}}"], check=False)
        return done.returncode == 0

    def is_shallow(self, git_dir: Path) -> bool:
        """Whether the mirror holds a commit without its parents (fetched by id, `--depth 1`)."""
        return (git_dir / "shallow").exists()

    def holds_history(self, git_dir: Path) -> bool:
        """Whether the mirror holds the source's branches and tags with their whole history."""
        if self.is_shallow(git_dir):
            return False
        done = self.git(git_dir, ["for-each-ref", "--count=1", "--format=%(refname)", "refs/heads", "refs/tags"])
        return bool(done.stdout.strip())

    # -- mirrors ----------------------------------------------------------------------

    def mirror(self, repo: str, commit: str) -> Path:
        """The bare mirror of `repo` holding `commit`, fetched by id the first time and reused after.

        UnknownRepo (bad name), FetchRefused (the source said no, timed out, or what it sends does
        not fit the budget), MissingCommit (asked for by id and fetched whole, still no `commit`).
        """
        return self.mirror_commits(repo, [commit])

    def mirror_commits(self, repo: str, commits: Sequence[str]) -> Path:
        """The bare mirror of `repo` holding every one of `commits`: those it lacks fetched in one
        fetch by id (see the module's docstring). The errors of `mirror`."""
        url = self.url_for(repo)
        wanted = list(dict.fromkeys(commits))
        for commit in wanted:
            if not is_commit_id(commit):
                raise MissingCommit(f"the task's base commit {commit[:80]!r} is not a commit id (hex digits)")
        if not wanted:
            raise MissingCommit("no commit was asked for")
        path = self.mirror_path(repo)
        name = self.safe_name(repo)
        self.make_private()
        with flocked(self.mirrors_dir / f"{name}.lock"):
            made = (path / "HEAD").exists()
            missing = [c for c in wanted if not made or not self.has_commit(path, c)]
            if missing:
                self._fetch(url, path, name, repo=repo, create=not made, commits=missing)
                for commit in missing:
                    if not self.has_commit(path, commit):
                        raise MissingCommit(self._missing(repo, commit))
            self._touch(name)
        return path

    def fetch_history(self, repo: str) -> bool:
        """Fetch the source's branches and tags, with their history, into the mirror of `repo` (made
        by `mirror`): what a 3-way merge of a patch written at another commit needs. True when it
        fetched, False when the mirror held them already. FetchRefused as `mirror`."""
        url = self.url_for(repo)
        path = self.mirror_path(repo)
        name = self.safe_name(repo)
        self.make_private()
        with flocked(self.mirrors_dir / f"{name}.lock"):
            if not (path / "HEAD").exists():
                raise NotFetched(f"{repo} is not fetched yet")
            if self.holds_history(path):
                return False
            self._fetch(url, path, name, repo=repo, create=False, commits=[])
            self._touch(name)
        return True

    def cached(self, repo: str, commit: str) -> Path:
        """The bare mirror of `repo` if the cache holds `commit` in it; NotFetched otherwise. No fetch,
        no lock: what a page request reads."""
        path = self.mirror_path(repo)
        if not (path / "HEAD").exists():
            raise NotFetched(f"{repo} is not fetched yet")
        if not self.has_commit(path, commit):
            raise NotFetched(f"{repo} is fetched, but not its commit {commit[:12]} yet")
        return path

    def _missing(self, repo: str, commit: str) -> str:
        return (
            f"{repo} has no commit {commit}: the source did not send it when asked for it by id, "
            "and none of its branches and tags holds it (the whole repository was fetched again)"
        )

    def _touch(self, name: str) -> None:
        used = self.mirrors_dir / f"{name}.used"
        used.touch()
        os.utime(used)

    def _fetch(self, url: str, path: Path, name: str, *, repo: str, create: bool, commits: Sequence[str]) -> None:
        """Fetch `commits` from `url` into the mirror at `path` (made in a scratch directory and renamed
        when `create`), by id where the source allows it, else whole; with no `commits`, the whole
        history. In room reserved in the budget first and grown as the fetch grows (refused when it
        cannot)."""
        private_dir(self.mirrors_dir)
        target = path.with_name(f"{path.name}.tmp-{os.getpid()}") if create else path
        if create:
            remove_tree(target)
            # --shared=0600: git makes every file of the mirror 0600 and every folder 0700, whatever the umask
            init = ["init", "--bare", "--quiet", "--template=", "--shared=0600", str(target)]
            run_git(None, init, timeout=self.git_timeout)
            for key, value in (("gc.auto", "0"), ("maintenance.auto", "false"), ("core.logAllRefUpdates", "false")):
                run_git(target, ["config", key, value], timeout=self.git_timeout)
        counter = self.mirrors_dir / f"{name}.fetches"
        counter.write_text(str(self.fetches_by_name(name) + 1))
        step = self.reserve_step()
        fetched = False
        try:
            with self.reserve(target, room=step, least=self.least_step(), what=f"the repository {repo}", mirror=name) as held:
                fetched = True
                if not commits or not self._fetch_by_id(target, url, commits, held):
                    whole = ["--unshallow"] if self.is_shallow(target) else []
                    self._run_fetch(target, url, list(FETCH_REFSPECS), held, options=whole)
                held.ensure(tree_bytes(target))  # what the fetch wrote since it was last looked at
                if create:
                    remove_tree(path)  # what a worker killed mid-rename may have left (no HEAD, so not a mirror)
                    target.rename(path)
        except BaseException as exc:
            if create:
                remove_tree(target)
            elif fetched and isinstance(exc, OverBudget):
                self._drop(name)  # what the fetch added cannot be told apart from the rest: the mirror goes
            raise

    def _fetch_by_id(self, git_dir: Path, url: str, commits: Sequence[str], held: Reservation) -> bool:
        """Fetch `commits` by id, each kept under `refs/gagar/commits/<id>`: in one fetch, then (when
        the source lacks one of them) one at a time. Only the commits and their trees come when the
        mirror has no history (`--depth 1`); a mirror with history gets what it lacks of theirs.
        False when the source will not send some of them by id (REFUSED_BY_ID), or one is not a
        whole id; FetchRefused for any other failure."""
        if any(len(commit) not in FULL_ID_LENGTHS for commit in commits):
            return False
        options = ["--depth", "1"] if self.is_shallow(git_dir) or not self.holds_history(git_dir) else []
        try:
            self._run_fetch(git_dir, url, [f"+{c}:{COMMIT_REFS}{c}" for c in commits], held, options=options)
            return True
        except OverBudget:
            raise
        except FetchRefused as exc:
            said = str(exc).lower()
            if not any(refusal in said for refusal in REFUSED_BY_ID):
                raise
            if len(commits) == 1 or "unadvertised object" in said:
                return False
        for commit in commits:  # one of them is not there: the others are fetched, each on its own
            try:
                self._run_fetch(git_dir, url, [f"+{commit}:{COMMIT_REFS}{commit}"], held, options=options)
            except OverBudget:
                raise
            except FetchRefused:
                pass
        return all(self.has_commit(git_dir, commit) for commit in commits)

    def fetches_by_name(self, name: str) -> int:
        try:
            return int((self.mirrors_dir / f"{name}.fetches").read_text() or 0)
        except (OSError, ValueError):
            return 0

    def _run_fetch(self, git_dir: Path, url: str, refspecs: list[str], held: Reservation, *, options: Sequence[str] = ()) -> None:
        """One `git fetch` (with `options`, such as `--depth 1`), killed at `fetch_timeout` or when the
        mirror outgrows the room `held` and no more can be had."""
        config = ["protocol.file.allow=always"] if self.local else ["protocol.file.allow=never"]
        config += ["protocol.ext.allow=never", "fetch.recurseSubmodules=false", "transfer.fsckObjects=false"]
        config += ["fetch.unpackLimit=1"]  # kept as the pack it came in, never a loose file per object
        command = ["git", "-c", "core.hooksPath=" + os.devnull]
        for item in config:
            command += ["-c", item]
        command += ["--git-dir", str(git_dir), "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", *options]
        command += ["--", url, *refspecs]
        started = time.monotonic()
        with subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=git_env(isolated=False),
            start_new_session=True,
        ) as proc:
            reason = ""
            over_budget = False
            stderr = b""
            while True:
                try:
                    _, stderr = proc.communicate(timeout=WATCH_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() - started > self.fetch_timeout:
                        reason = f"the fetch took longer than {self.fetch_timeout:g} s and was stopped"
                    else:
                        size = tree_bytes(git_dir)
                        try:
                            if size > held.limit:
                                held.ensure(size, room=self.reserve_step(), least_room=self.least_step())
                        except OverBudget as exc:
                            reason, over_budget = f"{exc}; the fetch was stopped", True
                    if reason:
                        with contextlib.suppress(ProcessLookupError):
                            os.killpg(proc.pid, signal.SIGKILL)
                        proc.communicate()
                        break
        shown = self.redact(url)
        if reason:
            for scratch in git_dir.glob("objects/pack/tmp_*"):
                scratch.unlink(missing_ok=True)  # the pack the killed fetch was writing
            raise (OverBudget if over_budget else FetchRefused)(f"fetching {shown}: {reason}")
        if proc.returncode != 0:
            said = self.redact(stderr.decode("utf-8", "replace")) or f"exit status {proc.returncode}"
            raise FetchRefused(f"fetching {shown} failed: {said}")

    # -- budget -----------------------------------------------------------------------

    def used_bytes(self) -> int:
        """What the budget counts: the mirrors and the worktrees, on disk."""
        return tree_bytes(self.mirrors_dir) + tree_bytes(self.trees_dir)

    def reserve_step(self) -> int:
        """How much room a fetch asks for at a time."""
        return min(self.budget_bytes, max(self.budget_bytes // 16, MIN_RESERVE_BYTES))

    def least_step(self) -> int:
        """The least room a fetch goes on with when the budget has no more."""
        return max(1, min(64 * 1024, self.budget_bytes // 64))

    @contextlib.contextmanager
    def reserve(self, path: Path, *, room: int, what: str, mirror: str, least: int | None = None) -> Iterator[Reservation]:
        """Room in the budget for `what` (said in a refusal), which writes under `path` inside the
        mirror named `mirror`: `path` may grow by `room` bytes (by `least`, within the budget, when no
        more can be had; by all of `room` when `least` is None), and `ensure` asks for more. Every
        process sees the reservation (a file in `<cache>/reserved`, flocked while it lives, so a dead
        worker's counts no more) until the block ends. OverBudget when the room cannot be had, after
        evicting what can be."""
        private_dir(self.reserved_dir)
        token = f"{os.getpid()}-{threading.get_ident()}-{secrets.token_hex(4)}"
        scratch = self.reserved_dir / f".{token}"
        fd = os.open(scratch, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        held = Reservation(source=self, path=path, what=what, mirror=mirror, file=self.reserved_dir / token, fd=fd)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held.record(0)
            scratch.rename(held.file)  # seen by others only once it is locked
            held.ensure(tree_bytes(path), room=room, least_room=least)
            yield held
        finally:
            scratch.unlink(missing_ok=True)
            held.file.unlink(missing_ok=True)
            os.close(fd)

    def _claimed(self, mine: Path | None = None) -> tuple[int, set[str]]:
        """Bytes on disk plus what the live reservations other than `mine` may still write, and the
        mirrors they write in (never evicted under them). Called with the budget lock held."""
        total = self.used_bytes()
        busy: set[str] = set()
        if not self.reserved_dir.is_dir():
            return total, busy
        for entry in self.reserved_dir.iterdir():
            if entry.name.startswith(".") or entry == mine:
                continue
            try:
                fd = os.open(entry, os.O_RDONLY)
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:  # held: a live reservation
                    said = json.loads(os.pread(fd, 8192, 0) or b"{}")
                    busy.add(str(said.get("mirror", "")))
                    if said.get("path"):
                        total += max(0, int(said.get("limit", 0)) - tree_bytes(Path(said["path"])))
                else:
                    entry.unlink(missing_ok=True)  # nobody holds it: its worker died
            except (OSError, ValueError, TypeError):
                pass
            finally:
                os.close(fd)
        return total, busy

    def evict(self, keep: set[str] | frozenset[str] = frozenset()) -> list[str]:
        """Remove the least recently used mirrors (and the worktrees made from them) until the cache,
        with what is reserved in it, is under `budget_bytes`; never one of `keep` (repository names),
        one in use or one being written. The names removed."""
        with flocked(self.cache / "budget.lock"):
            claimed, busy = self._claimed()
            removed, _freed = self._evict_locked(busy | {self.safe_name(r) for r in keep}, claimed - self.budget_bytes)
        return removed

    def _evict_locked(self, kept: set[str], over: int) -> tuple[list[str], int]:
        """Remove least recently used mirrors not in `kept` nor locked until `over` bytes are freed
        (the budget lock held). The names removed, and the bytes freed."""
        if over <= 0 or not self.mirrors_dir.is_dir():
            return [], 0
        entries: list[tuple[float, str]] = []
        for mirror in self.mirrors_dir.glob("*.git"):
            name = mirror.name[: -len(".git")]
            used = self.mirrors_dir / f"{name}.used"
            entries.append((used.stat().st_mtime if used.exists() else 0.0, name))
        removed = []
        freed = 0
        for _used, name in sorted(entries):
            if freed >= over:
                break
            if name in kept:
                continue
            with flocked(self.mirrors_dir / f"{name}.lock", blocking=False) as got:
                if not got:
                    continue
                freed += self._drop(name)
            removed.append(name)
        return removed, freed

    def _drop(self, name: str) -> int:
        """Remove mirror `name` and the worktrees made from it (its lock held); the bytes freed."""
        freed = 0
        for tree in self._trees_of(name):
            freed += tree_bytes(tree)
            remove_tree(tree)
        mirror = self.mirrors_dir / f"{name}.git"
        freed += tree_bytes(mirror)
        remove_tree(mirror)
        (self.mirrors_dir / f"{name}.used").unlink(missing_ok=True)
        return freed

    def _trees_of(self, name: str) -> list[Path]:
        """The group worktree directories (`<trees>/<key>`) made from mirror `name` (their `.mirror` says)."""
        if not self.trees_dir.is_dir():
            return []
        out = []
        for group in self.trees_dir.iterdir():
            with contextlib.suppress(OSError):
                if (group / ".mirror").read_text().strip() == name:
                    out.append(group)
        return out


def megabytes(size: int) -> str:
    return f"{size / 1024**2:,.1f}".removesuffix(".0")


@dataclass
class Reservation:
    """Room held in a cache's budget (see `RepoSource.reserve`): `path` may grow to `limit` bytes."""

    source: RepoSource
    path: Path
    what: str
    mirror: str
    file: Path
    fd: int
    limit: int = 0

    def record(self, limit: int) -> None:
        said = json.dumps({"path": str(self.path), "mirror": self.mirror, "limit": limit}).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, said, 0)
        self.limit = limit

    def ensure(self, size: int, *, room: int = 0, least_room: int | None = None) -> None:
        """Hold room for `path` to reach `size` bytes and `room` more; with `least_room`, as much of
        it as the budget has, down to `least_room`. The least recently used mirrors are evicted to
        make it; OverBudget when it does not fit."""
        source = self.source
        budget = source.budget_bytes
        if least_room is None:
            want = least = size + room
        else:
            want, least = (min(size + extra, max(size, budget)) for extra in (room, least_room))
        if least <= self.limit:
            return
        if least > budget:
            raise OverBudget(
                f"{self.what} needs {megabytes(least)} MB, more than the whole cache budget of "
                f"{megabytes(budget)} MB (GAGAR_REPO_CACHE_BYTES)"
            )
        with flocked(source.cache / "budget.lock"):
            claimed, busy = source._claimed(self.file)
            others = claimed - tree_bytes(self.path)  # what is on disk and reserved, but for this
            if others + want > budget:
                _removed, freed = source._evict_locked(busy | {self.mirror}, others + want - budget)
                others -= freed
            if others + want <= budget:
                self.record(want)
            elif others + least <= budget:
                self.record(budget - others)
            else:
                raise OverBudget(
                    f"the repository cache is full: {self.what} needs {megabytes(least)} MB and its budget of "
                    f"{megabytes(budget)} MB has {megabytes(max(0, budget - others))} MB free, the rest held by "
                    "mirrors in use and work in progress; try again when that work is done"
                )
