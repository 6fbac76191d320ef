"""Git repositories built inside a test, offline, for the grader's workspace (grading.repos).

- `tiny_package(root)`: a small Python package with its own tests (pytest can run them), a binary
  file, an executable script and links; three commits, `TinyRepo.base` the first (the third
  changes `add`'s line, so a patch written after it applies at base only 3-way, or conflicts).
- `history_repo(root, package)`: REAL history made from an installed pure-Python package's
  sources (sqlparse by default, from this venv): its files committed in a few batches, then
  edits, then a later commit that changes one of its functions; `base` is an earlier commit.
- `patch_at(repo, commit, edit)`: the patch (`git diff --cached`) an agent would have left after
  `edit(worktree)` at `commit`, made on a scratch clone.
- edits for `patch_at`: `edit`, `link`, `rename`, `delete`, `chmod`, `steps` (several in a row);
  `new_file(path, text)`: a hand-written patch adding one file (any path, for refusals).
- `plain_apply(repo, commit, patch)` and `snapshot(dir)`: what a plain `git apply` of a patch
  on a fresh clone at `commit` leaves, file by file, to compare a workspace state with.
- `incomplete_copy(repo, root, at, kind)`: a bare copy of `repo` whose history before `at` is
  missing, as companies keep mirrors: "shallow" (fetched `--depth 1` at `at`) or "pruned" (every
  commit, with the objects of the commits before `at` deleted), so a whole fetch of it fails.
- `refuse_fetch_by_id(path)` and `speak_protocol_v0(home)`: a source that will not send a
  commit it does not advertise (protocol v0, `uploadpack.allow*SHA1InWant` off).
Every repository lives under `root/<owner>/<name>` so `file://<root>/{repo}` serves it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path

ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_AUTHOR_DATE": "1700000000 +0000",
    "GIT_COMMITTER_DATE": "1700000000 +0000",
}


def git(cwd: Path, *args: str, input: bytes | None = None, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=ENV, input=input, capture_output=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode("utf-8", "surrogateescape")


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return path


@dataclass
class TinyRepo:
    root: Path  # serves file://<root>/{repo}
    repo: str  # "owner/name"
    path: Path
    base: str
    commits: list[str] = field(default_factory=list)

    @property
    def template(self) -> str:
        return f"file://{self.root}/{{repo}}"


TINY_FILES = {
    "pyproject.toml": '[project]\nname = "tiny"\nversion = "0.1"\n',
    "tiny/__init__.py": '"""A tiny package."""\n\nfrom tiny.calc import add, mean\n\n__all__ = ["add", "mean"]\n',
    "tiny/calc.py": (
        "def add(a, b):\n"
        "    return a + b\n"
        "\n"
        "\n"
        "def mean(values):\n"
        "    total = 0\n"
        "    for value in values:\n"
        "        total = add(total, value)\n"
        "    return total / len(values)\n"
    ),
    "tests/test_calc.py": (
        "from tiny import add, mean\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_mean():\n    assert mean([1, 2, 3]) == 2\n"
    ),
    "README.md": "# tiny\n\nAdds and averages.\n",
    "data/logo.bin": None,  # binary, written below
    "scripts/run.sh": "#!/bin/sh\necho run\n",
}


def tiny_package(root: Path, repo: str = "acme/tiny") -> TinyRepo:
    path = init_repo(root / repo)
    for name, text in TINY_FILES.items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            target.write_bytes(bytes(range(256)) * 4)
        else:
            target.write_text(text)
    (path / "scripts/run.sh").chmod(0o755)
    (path / "docs").mkdir()
    (path / "docs/guide.md").write_text("Guide.\n")
    os.symlink("../README.md", path / "docs/readme-link")  # a link inside the tree
    os.symlink("docs", path / "docs-link")  # a directory link a patch may try to write through
    first = commit_all(path, "tiny: add and mean")
    (path / "README.md").write_text("# tiny\n\nAdds and averages numbers.\n")
    second = commit_all(path, "README: say numbers")
    calc = path / "tiny/calc.py"
    calc.write_text(calc.read_text().replace("def add(a, b):", "def add(a, b):  # upstream: the sum"))
    third = commit_all(path, "calc: say what add returns")
    return TinyRepo(root=root, repo=repo, path=path, base=first, commits=[first, second, third])


def package_dir(package: str) -> Path:
    spec = find_spec(package)
    assert spec is not None and spec.origin is not None, f"{package} is a dependency of the project"
    return Path(spec.origin).parent


def history_repo(root: Path, package: str = "sqlparse", repo: str = "upstream/sqlparse") -> TinyRepo:
    """Real code, real history: `package`'s own sources committed in batches, then edited.

    Commits: 1-3 the package's files in three batches (sorted by path), 4 a docstring edit in
    every module, 5 (the base) a new module; 6 a change to a function of the first module with
    one, after the base (a rollout's patch written at the base can conflict with it)."""
    source = package_dir(package)
    path = init_repo(root / repo)
    files = sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)
    assert len(files) > 10, f"{package} has {len(files)} Python files"
    commits = []
    third = max(1, len(files) // 3)
    for batch in range(3):
        chunk = files[batch * third : (batch + 1) * third] if batch < 2 else files[2 * third :]
        for file in chunk:
            target = path / package / file.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
        commits.append(commit_all(path, f"import {package}: batch {batch + 1} of 3"))
    for file in sorted((path / package).rglob("*.py")):
        file.write_text(f"# Part of {package}, imported for tests.\n" + file.read_text())
    commits.append(commit_all(path, "mark every module as imported"))
    (path / package / "gagar_extra.py").write_text("def extra(value):\n    return value * 2\n")
    commits.append(commit_all(path, "add gagar_extra"))
    changed = function_file(path / package)
    text = changed.read_text()
    changed.write_text(text.replace("def ", "def _upstream_renamed_", 1) if "def " in text else text + "\n# changed\n")
    commits.append(commit_all(path, f"upstream changes {changed.name}"))
    return TinyRepo(root=root, repo=repo, path=path, base=commits[4], commits=commits)


def function_file(package: Path) -> Path:
    """The first module (by path) with a top-level function in it."""
    for file in sorted(package.rglob("*.py")):
        if "\ndef " in file.read_text():
            return file
    raise AssertionError(f"no module of {package} defines a function")


def patch_at(repo: TinyRepo, commit: str, edit: Callable[[Path], None], *, binary: bool = False) -> str:
    """The patch `edit(worktree)` leaves at `commit` (staged with `git add -A`, then `git diff --cached`)."""
    with tempfile.TemporaryDirectory(prefix="gagar-patch-") as scratch:
        work = Path(scratch) / "w"
        git(Path(scratch), "clone", "-q", "--no-checkout", str(repo.path), str(work))
        git(work, "checkout", "-q", "--detach", commit)
        edit(work)
        git(work, "add", "-A")
        args = ["diff", "--cached", "--no-color", "--no-ext-diff"] + (["--binary"] if binary else [])
        return git(work, *args)


def snapshot(root: Path) -> dict[str, tuple[str, bytes, bool]]:
    """Every file under `root` but .git: path -> (kind, bytes or link target, executable)."""
    out: dict[str, tuple[str, bytes, bool]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not (folder == str(root) and d == ".git")]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            full = Path(folder) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = ("symlink", os.readlink(full).encode(), False)
            else:
                out[rel] = ("file", full.read_bytes(), bool(full.lstat().st_mode & 0o100))
    return out


def plain_apply(repo: TinyRepo, commit: str, patch: str, *, three_way: bool = False) -> dict[str, tuple[str, bytes, bool]]:
    """The tree a plain `git apply` (or `--3way`) of `patch` leaves on a fresh clone at `commit`."""
    with tempfile.TemporaryDirectory(prefix="gagar-plain-") as scratch:
        work = Path(scratch) / "w"
        git(Path(scratch), "clone", "-q", str(repo.path), str(work))
        git(work, "checkout", "-q", "--detach", commit)
        if patch.strip():
            git(work, "apply", *(["--3way"] if three_way else []), "-", input=patch.encode("utf-8", "surrogateescape"))
        return snapshot(work)


def new_file(path: str, text: str = "x\n", *, mode: str = "100644") -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def edit(path: str, old: str, new: str):
    def change(work: Path) -> None:
        target = work / path
        text = target.read_text()
        assert old in text, f"{old!r} is not in {path}"
        target.write_text(text.replace(old, new, 1))

    return change


def link(path: str, target: str):
    def change(work: Path) -> None:
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, work / path)

    return change


def steps(*changes):
    def change(work: Path) -> None:
        for c in changes:
            c(work)

    return change


def rename(old: str, new: str):
    return lambda work: (work / old).rename(work / new)


def delete(path: str):
    return lambda work: (work / path).unlink()


def chmod(path: str, mode: int):
    return lambda work: (work / path).chmod(mode)


def move_calc(work: Path) -> None:
    rename("tiny/calc.py", "tiny/arith.py")(work)
    edit("tiny/__init__.py", "tiny.calc", "tiny.arith")(work)


MOVE_CALC = move_calc


def incomplete_copy(repo: TinyRepo, root: Path, at: str, kind: str) -> TinyRepo:
    """A bare copy of `repo` under `root/<repo>` holding `at` but not the history before it (see the
    module's docstring); `kind` is "shallow" (`at` its branch `main`) or "pruned" (`repo`'s branches
    and the history after `at` kept)."""
    path = root / repo.repo
    path.mkdir(parents=True)
    git(path, "init", "-q", "--bare", "-b", "main")
    if kind == "shallow":
        git(path, "fetch", "-q", "--depth", "1", f"file://{repo.path}", f"{at}:refs/heads/main")
    elif kind == "pruned":
        git(path, "fetch", "-q", f"file://{repo.path}", "+refs/heads/*:refs/heads/*")
        packs = list((path / "objects/pack").glob("*.pack"))
        for pack in packs:  # every object as a file of its own, so old ones can be deleted
            moved = pack.with_name("unpacking")
            pack.rename(moved)
            git(path, "unpack-objects", "-q", input=moved.read_bytes())
            moved.unlink()
            pack.with_suffix(".idx").unlink()
        for commit in git(path, "rev-list", f"{at}^@").split():
            (path / "objects" / commit[:2] / commit[2:]).unlink()
    else:
        raise ValueError(f"no such kind of copy: {kind}")
    return TinyRepo(root=root, repo=repo.repo, path=path, base=at, commits=[at])


def refuse_fetch_by_id(path: Path) -> None:
    """The repository at `path`, served over protocol v0, refuses a commit asked for by id."""
    for key in ("uploadpack.allowAnySHA1InWant", "uploadpack.allowReachableSHA1InWant", "uploadpack.allowTipSHA1InWant"):
        git(path, "config", key, "false")


def speak_protocol_v0(home: Path) -> dict[str, str]:
    """The environment (to monkeypatch) of a worker whose git speaks protocol v0, as some servers
    still do: its global configuration (which fetches read) in `home`. In v2 a server sends any
    object it has when asked for it by id; in v0 its `uploadpack.allow*SHA1InWant` decide."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text("[protocol]\n\tversion = 0\n")
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
