"""Benchmark: the grader's workspace (grading.repos) on a big repository — mirror, states, reads, checkouts.

    .venv/bin/python benchmarks/workspace.py [--files 40000] [--rollouts 16] [--keep DIR]

Builds, in a scratch directory, the largest repository this machine has the files for: every
file under 1 MB (no .pyc) of this Python's site-packages and standard library, then of
`--extra` directories (default /usr/include where there is one), up to `--files`, committed
in four commits (60 % of the files, the rest, then two commits editing 200 modules each; the
base is the last). It is served as `file://`, so the fetch is git's local transport: no
network, the cost of packing and indexing the objects, not of a link.

Then, on a fresh cache (`RepoSource`, the cache budget of the default 20 GB):

0. Before: the first materialisation as the cache made it before it fetched commits by id (and
   as it still does for a source that will not send a commit by id): the whole repository (its
   branches and tags) fetched into a cache of its own, then every rollout's state. The origin's
   files are read once before either is timed, so the first does not pay for a cold disk.
1. First materialisation of a group of `--rollouts` rollouts: the base commit fetched by id
   (`--depth 1`), then every rollout's state (`GitRepoView.applied()`); the ratio to 0. The
   patches, made with difflib at the base: each edits three modules and adds one; one patch is
   empty and one does not apply (its context is not in the file), as in real groups.
2. Cached: the same group again in a new view (the states are memoised in the mirror), and a
   second group with other patches on the same mirror (no fetch; its states are made).
3. Reads at a state: a file, the root listing, a diff of the whole tree between two rollouts,
   `git grep` of a common word (bounded at 200 matches) and of a string found in one file only
   (the whole tree searched).
4. A worktree for one rollout (`checkout`), then again (reused), and what it takes on disk.
5. Disk per group: the objects its states add to the mirror, and with a worktree per state
   (one measured, times the rollouts and base).
"""

from __future__ import annotations

import argparse
import difflib
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from _support import cpu_model, load_average, memory_gib, usable_cores

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grading.repos.source import RepoSource, tree_bytes  # noqa: E402 (after the path is set)
from grading.repos.view import GitRepoView, cleanup  # noqa: E402

MAX_FILE_BYTES = 1024**2
T = TypeVar("T")
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout


def source_files(limit: int, extra: list[str]) -> list[tuple[Path, str]]:
    """(file, path in the repository) for up to `limit` files of the Python installation and `extra`."""
    roots = [("site-packages", Path(sysconfig.get_paths()["purelib"])), ("stdlib", Path(sysconfig.get_paths()["stdlib"]))]
    roots += [(Path(e).name or "extra", Path(e)) for e in extra if Path(e).is_dir()]
    out: list[tuple[Path, str]] = []
    for prefix, root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not (prefix == "stdlib" and d == "site-packages"))
            for name in sorted(files):
                full = Path(folder) / name
                if name.endswith(".pyc") or full.is_symlink():
                    continue
                try:
                    if full.stat().st_size > MAX_FILE_BYTES:
                        continue
                except OSError:
                    continue
                out.append((full, f"{prefix}/{full.relative_to(root).as_posix()}"))
                if len(out) >= limit:
                    return out
    return out


def build_origin(where: Path, files: list[tuple[Path, str]], rng: random.Random) -> tuple[Path, str, list[str]]:
    """The origin repository (where/bench/big), its base commit, and the modules patches may edit."""
    repo = where / "bench" / "big"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    cut = int(len(files) * 0.6)
    for batch in (files[:cut], files[cut:]):
        for full, rel in batch:
            target = repo / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(full, target)
            except OSError:
                continue
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"import {len(batch)} files")
    modules = []
    for _, rel in files:
        if rel.endswith(".py"):
            with open(repo / rel, "rb") as handle:
                data = handle.read()
            if data.endswith(b"\n") and data.count(b"\n") > 20:
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                modules.append(rel)
    for round_ in range(2):
        for rel in rng.sample(modules, min(200, len(modules))):
            path = repo / rel
            path.write_text(path.read_text() + f"# edited in round {round_ + 1}\n")
        git(repo, "commit", "-q", "-am", f"edit modules, round {round_ + 1}")
    return repo, git(repo, "rev-parse", "HEAD").strip(), modules


def module_patch(repo: Path, rel: str, rng: random.Random, tag: str) -> str:
    lines = (repo / rel).read_text().splitlines(keepends=True)
    at = rng.randrange(5, len(lines) - 5)
    new = [*lines[:at], f"# {tag}: a rollout's edit\n", *lines[at:]]
    diff = list(difflib.unified_diff(lines, new, f"a/{rel}", f"b/{rel}", n=3))
    return f"diff --git a/{rel} b/{rel}\n" + "".join(diff)


def group_patches(repo: Path, modules: list[str], rollouts: int, rng: random.Random, group: str) -> dict[int, str]:
    patches: dict[int, str] = {}
    for i in range(rollouts):
        if i == rollouts - 1:
            patches[i] = ""  # a rollout that changed nothing
            continue
        parts = [module_patch(repo, rel, rng, f"{group} r{i}") for rel in rng.sample(modules, 3)]
        new = f"bench_added/{group}_r{i}.py"
        unique = f"unique_marker_{group}_r{i}_{rng.randrange(10**9)}"
        header = f"diff --git a/{new} b/{new}\nnew file mode 100644\n--- /dev/null\n+++ b/{new}\n"
        parts.append(f"{header}@@ -0,0 +1 @@\n+{unique} = 1\n")
        patches[i] = "".join(parts)
    if rollouts > 2:
        rel = modules[0]
        patches[rollouts - 2] = (
            f"diff --git a/{rel} b/{rel}\n--- a/{rel}\n+++ b/{rel}\n"
            "@@ -1,3 +1,3 @@\n no such line\n-in this file\n+anywhere\n here\n"
        )
    return patches


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def warm_page_cache(root: Path) -> None:
    """Read every file under `root` once, so the first fetch timed does not read it cold and the second warm."""
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as handle:
                while handle.read(1 << 20):
                    pass


def fetch_whole(source: RepoSource, repo: str) -> Path:
    """A new mirror of `repo` holding its branches and tags: what `RepoSource` fetches from a source
    that will not send a commit by id, and what it fetched for every repository before."""
    path = source.mirror_path(repo)
    source.make_private()
    source._fetch(source.url_for(repo), path, source.safe_name(repo), repo=repo, create=True, commits=[])
    return path


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=40_000, help="at most this many files in the repository")
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--extra", nargs="*", default=["/usr/include"], help="more directories to take files from")
    parser.add_argument("--keep", type=Path, default=None, help="build in this directory and keep it (default: a scratch one)")
    args = parser.parse_args()
    rng = random.Random(29)
    scratch = Path(tempfile.mkdtemp(prefix="gagar-bench-workspace-")) if args.keep is None else args.keep
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        print(
            f"machine:   {cpu_model()}, {usable_cores()} cores, {memory_gib()} RAM, "
            f"{subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}, "
            f"load average {load_average():.2f} at start"
        )
        files = source_files(args.files, args.extra)
        build_s, (origin, base, modules) = timed(lambda: build_origin(scratch / "origin", files, rng))
        count = int(git(origin, "ls-files", "-z").count("\0"))
        print(
            f"origin:    {count:,} files, {mb(tree_bytes(origin) - tree_bytes(origin / '.git'))} in the tree, "
            f"{mb(tree_bytes(origin / '.git'))} of .git, 4 commits (built in {build_s:.1f} s)"
        )
        template = f"file://{scratch / 'origin'}/{{repo}}"
        source = RepoSource(cache=scratch / "cache", url_template=template)
        repo = "bench/big"
        first = group_patches(origin, modules, args.rollouts, rng, "g1")
        second = group_patches(origin, modules, args.rollouts, rng, "g2")
        rows: list[tuple[str, str, str]] = []

        warm_page_cache(origin / ".git")  # neither fetch pays for reading the origin from disk first
        whole = RepoSource(cache=scratch / "cache-whole", url_template=template)
        whole_s, whole_mirror = timed(lambda: fetch_whole(whole, repo))
        whole_bytes = tree_bytes(whole_mirror)
        whole_states_s, _ = timed(GitRepoView(whole, repo, base, first).applied)
        rows.append(("before: the whole repository fetched (branches and tags)", f"{whole_s:.2f} s", mb(whole_bytes)))
        rows.append((f"before: {args.rollouts} states", f"{whole_states_s:.2f} s", ""))
        before_s = whole_s + whole_states_s
        rows.append(("before: first materialisation in all", f"{before_s:.2f} s", ""))

        fetch_s, mirror = timed(lambda: source.mirror(repo, base))
        assert source.is_shallow(mirror), "the base commit was fetched by id"
        mirror_bytes = tree_bytes(mirror)
        view = GitRepoView(source, repo, base, first)
        states_s, applied = timed(view.applied)
        hows = sorted({a.how for a in applied.values()})
        states_bytes = tree_bytes(mirror) - mirror_bytes
        rows.append(("first: the base commit fetched by id (--depth 1)", f"{fetch_s:.2f} s", mb(mirror_bytes)))
        each = f"{states_s / len(first) * 1000:.0f} ms each"
        rows.append((f"first: {args.rollouts} states ({', '.join(hows)})", f"{states_s:.2f} s", each))
        after_s = fetch_s + states_s
        rows.append(("first materialisation in all", f"{after_s:.2f} s", f"before/after {before_s / after_s:.1f}x"))
        again_s, _ = timed(lambda: GitRepoView(source, repo, base, first).applied())
        rows.append(("cached: the same group in a new view (memoised states)", f"{again_s:.2f} s", ""))
        other = GitRepoView(source, repo, base, second)
        other_s, _ = timed(other.applied)
        assert source.fetches(repo) == 1, "the second group fetched again"
        rows.append((f"cached: a second group of {args.rollouts} on the same mirror (no fetch)", f"{other_s:.2f} s", ""))

        usable = [i for i, a in applied.items() if a.how == "clean"]
        r0, r1 = usable[0], usable[1]
        some_file = modules[len(modules) // 2]
        read_s, data = timed(lambda: view.read(r0, some_file))
        rows.append(("read one file at a state", f"{read_s * 1000:.0f} ms", f"{len(data):,} bytes"))
        list_s, entries = timed(lambda: view.list(r0))
        rows.append(("list the root at a state", f"{list_s * 1000:.0f} ms", f"{len(entries)} entries"))
        diff_s, diff = timed(lambda: view.diff("", r0, r1))
        rows.append(("diff of the whole tree, rollout to rollout", f"{diff_s * 1000:.0f} ms", f"{len(diff):,} characters"))
        common_s, common = timed(lambda: view.grep(r0, "import", max_matches=200))
        said = f"{len(common.matches)}, cut {common.truncated}"
        rows.append(("grep a common word (200 matches at most)", f"{common_s * 1000:.0f} ms", said))
        rare = next(line for line in first[r0].splitlines() if "unique_marker" in line)[1:].split(" ")[0]
        rare_s, found = timed(lambda: view.grep(r0, rare, fixed=True))
        rows.append(
            (
                "grep a string in one file only (whole tree)",
                f"{rare_s:.2f} s",
                f"{len(found.matches)} match, timed out {found.timed_out}",
            )
        )
        assert not source.trees_dir.exists(), "nothing so far made a worktree"
        checkout_s, tree = timed(lambda: view.checkout(r0))
        tree_size = tree_bytes(tree)
        rows.append(("checkout of one rollout's tree (made)", f"{checkout_s:.2f} s", mb(tree_size)))
        reuse_s, _ = timed(lambda: view.checkout(r0))
        rows.append(("checkout again (reused)", f"{reuse_s * 1000:.1f} ms", ""))
        rows.append(("disk per group: states only (objects added to the mirror)", "", mb(states_bytes)))
        trees = len(first) + 1
        rows.append((f"disk per group: with a worktree per state ({trees} × one tree)", "", mb(states_bytes + trees * tree_size)))
        clean_s, removed = timed(lambda: cleanup(source.trees_dir, max_age_s=0, max_bytes=0))
        rows.append(("cleanup of the worktrees", f"{clean_s:.2f} s", f"{len(removed)} removed"))

        width = max(len(r[0]) for r in rows)
        print(f"\n{'step':<{width}}  {'time':>10}  {'':<24}")
        for name, seconds, note in rows:
            print(f"{name:<{width}}  {seconds:>10}  {note}")
    finally:
        if args.keep is None:
            for folder, dirs, _files in os.walk(scratch):
                for d in dirs:
                    full = os.path.join(folder, d)
                    if not os.path.islink(full):
                        os.chmod(full, 0o755)
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
