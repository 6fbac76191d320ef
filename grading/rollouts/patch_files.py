"""The order a patch's files are shown in on the judge panel. Pure: no Django.

An agent's patch often buries a one-line fix under the files it wrote for itself: a
`FIX_SUMMARY.md` of 1,600 lines sorts before `django/db/models/query.py`, and so does a
`debug_issue.py`. A reviewer should meet the change the task is about first. Each file
gets a *kind*, shown in this order (files of one kind keep the patch's order):

- ``core``: source files the change is about (anything below);
- ``test``: test files (a `tests`/`test`/`testing` directory, `test_*.py`, `*_test.py`,
  `tests.py`, `conftest.py`);
- ``docs``: documentation (`docs/`, `*.md`, `*.rst`, `*.txt`, README, CHANGES…);
- ``config``: build and tool configuration (`setup.py`, `pyproject.toml`, `tox.ini`…);
- ``extra``: the agent's scratch files, counted apart and collapsed behind a count ("+3
  extra files"): a file the patch *adds* with one of the scratch names of
  grading.rollouts.clusters (`debug_*.py`, `reproduce*.py`, `FIX_SUMMARY.md`, root
  `test_*.py`…), a new top-level script (`*.py` / `*.sh` added at the repository root), or
  a file the rollout's cluster counted as extra (`extra_files`: new files no other
  rollout of the group wrote). A file the patch modifies or deletes is never extra: it
  was in the repository before the agent came.

>>> files = [("FIX_SUMMARY.md", "added"), ("tests/test_q.py", "modified"), ("debug_q.py", "added"),
...          ("docs/q.rst", "modified"), ("pkg/q.py", "modified"), ("tox.ini", "modified")]
>>> [(kind, path) for kind, (path, _) in order_files(files, path=lambda f: f[0], status=lambda f: f[1])]
... # doctest: +NORMALIZE_WHITESPACE
[('core', 'pkg/q.py'), ('test', 'tests/test_q.py'), ('docs', 'docs/q.rst'), ('config', 'tox.ini'),
 ('extra', 'FIX_SUMMARY.md'), ('extra', 'debug_q.py')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter
from typing import TypeVar

from grading.rollouts.clusters import MAX_PATH_CHARS, is_scratch_name

KINDS = ("core", "test", "docs", "config", "extra")  # the order shown
COLLAPSED = frozenset({"extra"})  # shown behind "+N extra files"

TEST_DIRS = frozenset({"tests", "test", "testing"})
TEST_NAMES = frozenset({"tests.py", "conftest.py"})
DOC_DIRS = frozenset({"docs", "doc"})
DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc")
DOC_STEMS = frozenset({"readme", "changelog", "changes", "history", "news", "authors", "license", "contributing"})
CONFIG_NAMES = frozenset(
    {
        "setup.py",
        "setup.cfg",
        "pyproject.toml",
        "tox.ini",
        "pytest.ini",
        "makefile",
        "manifest.in",
        ".gitignore",
        "package.json",
        "package-lock.json",
        "requirements.txt",
        ".pre-commit-config.yaml",
        ".coveragerc",
        "noxfile.py",
    }
)
ROOT_SCRIPT_SUFFIXES = (".py", ".sh")
KEEP_AT_ROOT = frozenset({"setup.py", "conftest.py", "noxfile.py", "manage.py"})  # root .py files a repository ships

T = TypeVar("T")


def file_kind(path: str, status: str, *, extra_files: Iterable[str] = ()) -> str:
    """The kind of one file of a patch (module doc). `status`: as grading.rollouts.diffs
    says it (added | removed | modified | renamed | binary); `extra_files`: the paths the
    rollout's cluster counted as extra."""
    path = path or ""
    if len(path) > MAX_PATH_CHARS:  # never matched against names (as clusters does)
        return "core"
    lowered = path.lower()
    parts = lowered.split("/")
    name = parts[-1]
    new = status in ("added", "binary")  # a binary file's diff does not say; the names decide
    if new and (
        path in set(extra_files)
        or is_scratch_name(path)
        or (len(parts) == 1 and name.endswith(ROOT_SCRIPT_SUFFIXES) and name not in KEEP_AT_ROOT)
    ):
        return "extra"
    if name in CONFIG_NAMES or (name.startswith("requirements") and name.endswith(".txt")):
        return "config"
    if (
        any(part in TEST_DIRS for part in parts[:-1])
        or name in TEST_NAMES
        or (name.endswith(".py") and (name.startswith("test_") or name[:-3].endswith(("_test", "_tests"))))
    ):
        return "test"
    stem = name.rsplit(".", 1)[0]
    if any(part in DOC_DIRS for part in parts[:-1]) or name.endswith(DOC_SUFFIXES) or stem in DOC_STEMS:
        return "docs"
    return "core"


def order_files(
    files: Sequence[T],
    *,
    path: Callable[[T], str] = attrgetter("path"),
    status: Callable[[T], str] = attrgetter("status"),
    extra_files: Iterable[str] = (),
) -> list[tuple[str, T]]:
    """(kind, file) for every file, core first and extra last (KINDS); a stable sort, so
    files of one kind keep the patch's order. `files`: anything with a path and a status
    (grading.rollouts.diffs.FileDiff by default; `path` and `status` read others)."""
    extra = frozenset(extra_files)
    kinds = [(file_kind(path(f), status(f), extra_files=extra), f) for f in files]
    return sorted(kinds, key=lambda pair: KINDS.index(pair[0]))
