"""Which package a repository ships and which paths are tests or docs."""

from __future__ import annotations

import re
from collections.abc import Iterable

# --- package names and paths -------------------------------------------------------------

_DIST_ALIASES = {"scikit-learn": ("scikit-learn", "sklearn")}
_IMPORT_DIRS = {
    "scikit-learn": ("sklearn",),
    "matplotlib": ("lib/matplotlib", "lib/mpl_toolkits"),
    "pytest": ("src/pytest", "src/_pytest"),
}
_TEST_DIRS = ("tests", "test", "testing")
_DOC_DIRS = ("doc", "docs")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _repo_name(repo: str) -> str:
    return (repo or "").strip().strip("/").rsplit("/", 1)[-1].lower()


def package_names(repo: str) -> set[str]:
    """Normalised distribution names of the package under repair: "scikit-learn/scikit-learn" → {scikit-learn, sklearn}."""
    name = _repo_name(repo)
    if not name:
        return set()
    return {_norm(n) for n in (name, *_DIST_ALIASES.get(name, ()))}


def package_dirs(repo: str, fail_to_pass: Iterable[str] = ()) -> set[str]:
    """Directories that hold the code under repair: the import package (and its src/ form)
    plus the top directory of every FAIL_TO_PASS test module given as a path."""
    name = _repo_name(repo)
    dirs = set(_IMPORT_DIRS.get(name, (name.replace("-", "_"),) if name else ()))
    dirs |= {f"src/{d}" for d in list(dirs) if "/" not in d}
    for test in fail_to_pass or ():
        path = str(test).split("::")[0]
        if "/" in path and path.endswith(".py"):
            top = path.split("/")[0]
            if top not in _TEST_DIRS:
                dirs.add(top)
    return dirs


def is_test_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in _TEST_DIRS for p in parts[:-1])
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
        or name in ("conftest.py", "tests.py")
    )


def is_doc_path(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1].upper()
    return parts[0] in _DOC_DIRS or (len(parts) == 1 and name.startswith(("CHANGES", "CHANGELOG", "AUTHORS", "README")))
