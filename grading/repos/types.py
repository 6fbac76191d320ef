"""What the workspace hands the rest of the project. Pure: no Django.

Everything that fails for a reason the caller can state (an unknown repository, a commit the
mirror does not have, a fetch the source refused, a path that leaves the tree) raises a
`RepoError` whose message is written for the person or model reading it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

BASE: Literal["base"] = "base"  # what `at` says for the task's base commit; otherwise a rollout index

At = int | Literal["base"]


class RepoError(Exception):
    """A refusal with a reason (shown to graders as a tool error, to people as a message)."""


class UnknownRepo(RepoError):
    """The task names no repository, or one the configured source does not have."""


class MissingCommit(RepoError):
    """The mirror was fetched but does not contain the task's base commit."""


class FetchRefused(RepoError):
    """The source refused or failed the fetch (network, authentication, timeout, size budget)."""


class OverBudget(FetchRefused):
    """The cache's budget has no room for it: a repository (or a state's objects) bigger than the
    whole budget, or a cache full of mirrors in use and work in progress."""


class NotFetched(RepoError):
    """The cache does not hold the repository at the task's base commit, and this reader may not
    fetch it (a page request: a worker fetches it)."""


class PathRefused(RepoError):
    """A path that is absolute, climbs out of the tree, or names .git."""


class SandboxUnavailable(RepoError):
    """No check can run: the runner is missing or refused here (bubblewrap not installed, user
    namespaces denied, the SWE-ReX server unreachable), or it could not lay out the worktree."""


ApplyHow = Literal["base", "clean", "three_way", "partial", "failed"]


@dataclass(frozen=True)
class Applied:
    """How one rollout's patch went onto the base commit.

    `commit` is the state's commit in the mirror (the base commit itself for an empty patch,
    None when nothing applied); `skipped` names files the patch touches but could not carry
    (a binary change without its data), which `how == "partial"` says were left at base.
    """

    index: int
    how: ApplyHow
    commit: str | None
    error: str = ""
    skipped: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        return self.commit is not None


@dataclass(frozen=True)
class Limits:
    """Caps on one sandboxed check; each holds when the worker runs as root."""

    wall_s: float = 60.0
    cpu_s: int = 60
    memory_bytes: int = 2 * 1024**3  # address space of each process
    processes: int = 256  # of the sandbox's own uid, so a fork bomb stops here
    output_bytes: int = 64_000  # stdout and stderr together, kept; the rest is counted, not kept
    disk_bytes: int = 1024**3  # the throwaway writable layer, on top of the worktree's size
    files: int = 50_000  # inodes it may make on its tmpfs layers (/tmp, /dev/shm), on top of the worktree's


@dataclass(frozen=True)
class CheckResult:
    """What a check did. `exit_status` is None when it was killed (see `killed`)."""

    command: str
    exit_status: int | None
    seconds: float
    output: str
    truncated: bool = False
    output_bytes: int = 0  # produced in all, kept or not
    killed: str = ""  # "" | "wall time" | "output" | ...: why the sandbox stopped it
    sandbox: str = ""  # "bubblewrap" | "swe-rex": which runner held it


class Sandbox(Protocol):
    name: str

    def available(self) -> None:
        """Raise SandboxUnavailable unless checks can run here (cheap: probed once, then cached)."""
        ...

    def run(self, root: Path, command: str, limits: Limits) -> CheckResult:
        """Run `command` (a shell command line) with `root` as its working directory's contents."""
        ...


@dataclass(frozen=True)
class GrepMatch:
    path: str
    line: int  # 1-based
    text: str


@dataclass(frozen=True)
class GrepResult:
    matches: list[GrepMatch] = field(default_factory=list)
    truncated: bool = False  # more matches than asked for, or the time bound was hit
    timed_out: bool = False


@dataclass(frozen=True)
class Entry:
    name: str
    kind: Literal["file", "directory", "symlink", "submodule"]
    size: int | None = None


class RepoView(Protocol):
    """One group's repository states, as the grader's tools and the group page read them."""

    def applied(self) -> dict[int, Applied]:
        """Every rollout's patch application, computed once (creating the states on first call)."""
        ...

    def read(self, at: At, path: str) -> bytes:
        """A file's bytes at `at` (PathRefused, RepoError when missing or a directory)."""
        ...

    def list(self, at: At, path: str = "") -> list[Entry]:
        """A directory's entries at `at`, sorted by name."""
        ...

    def grep(
        self, at: At, pattern: str, *, path: str = "", fixed: bool = False, ignore_case: bool = False, max_matches: int = 200
    ) -> GrepResult:
        """`git grep` at `at`, bounded in matches and time."""
        ...

    def diff(self, path: str, a: At, b: At, *, context: int = 3) -> str:
        """Unified diff of one file (or the whole tree with path "") from state `a` to state `b`."""
        ...

    def checkout(self, at: At) -> Path:
        """A directory holding the tree at `at` (made on first call, then reused); read-only to callers."""
        ...
