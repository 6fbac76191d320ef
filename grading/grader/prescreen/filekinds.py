"""What a patched file is to the test run: a test module, pytest configuration, a conftest, a
file Python runs at start-up, documentation or source. Pure: no Django.

>>> [kind_of(p) for p in ("pkg/tests/test_a.py", "tests/conftest.py", "tox.ini", "sitecustomize.py", "pkg/a.py")]
['test_module', 'conftest', 'test_config', 'startup', 'source']
>>> collectable("sympy/core/tests/test_arit.py"), collectable("sympy/core/tests/x_test_old.py"), collectable("app/tests.py")
(True, False, True)
"""

from __future__ import annotations

import re

from grading.grader.prescreen.paths import _TEST_DIRS, is_doc_path, is_test_path

TEST_MODULE = "test_module"
CONFTEST = "conftest"
TEST_CONFIG = "test_config"  # pytest.ini, tox.ini, setup.cfg, pyproject.toml (their pytest sections)
STARTUP = "startup"  # sitecustomize.py, usercustomize.py, *.pth: Python runs them before any test
TEST_DATA = "test_data"  # anything else under a test directory
DOC = "doc"
SOURCE = "source"

CONFIG_NAMES = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
STARTUP_NAMES = ("sitecustomize.py", "usercustomize.py")
# The sections of each configuration file pytest reads its options from.
PYTEST_SECTIONS = {
    "pytest.ini": ("pytest",),
    ".pytest.ini": ("pytest",),
    "tox.ini": ("pytest",),
    "setup.cfg": ("tool:pytest",),
    "pyproject.toml": ("tool.pytest.ini_options", "tool.pytest"),
}


def name_of(path: str) -> str:
    return path.rsplit("/", 1)[-1]


_RUNNER_SCRIPT = re.compile(r"(?:^|/)run[_-]?tests?\w{0,40}\.py$|(?:^|/)bin/test$")


def is_runner_script(path: str) -> bool:
    """A repository's own test-runner script (Django's tests/runtests.py, sympy's bin/test)."""
    return _RUNNER_SCRIPT.search(path) is not None


def kind_of(path: str) -> str:
    name = name_of(path)
    if name == "conftest.py":
        return CONFTEST
    if name in STARTUP_NAMES or name.endswith(".pth"):
        return STARTUP
    if name in CONFIG_NAMES:
        return TEST_CONFIG
    if is_test_path(path):
        return TEST_MODULE if name.endswith(".py") else TEST_DATA
    if is_doc_path(path):
        return DOC
    return SOURCE


def collectable(path: str) -> bool:
    """Whether the default patterns of pytest (test_*.py, *_test.py) or of unittest and Django
    (test*.py) collect the module."""
    name = name_of(path)
    return name.endswith(".py") and (name.startswith("test") or name.endswith("_test.py"))


def test_dirs(path: str) -> tuple[str, ...]:
    """The test directories (tests/, test/, testing/) on a path, in order."""
    return tuple(p for p in path.split("/")[:-1] if p in _TEST_DIRS)


def leaves_collection(old: str, new: str) -> bool:
    """Whether renaming the test module `old` to `new` takes it out of collection: the new name
    no longer matches, or a test directory on its path was renamed to something else."""
    if not collectable(old):
        return False
    return not collectable(new) or len(test_dirs(new)) < len(test_dirs(old))
