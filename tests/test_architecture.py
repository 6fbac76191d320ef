"""The layers hold, and the contracts would catch a new back-edge.

`make check` runs import-linter on the tree; these tests run it on a copy of the packages
with one deliberate violation each, so a contract that stopped checking anything fails here.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture
def tree(tmp_path):
    for package in ("gagar_web", "grading", "reviews"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "migrations"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + "\n" + line + "\n")


def test_the_tree_keeps_every_contract(tree):
    result = lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_grading_importing_reviews_breaks_the_layers(tree):
    append(tree / "grading" / "selectors.py", "from reviews.models import Judgment  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "Layers: gagar_web -> reviews -> grading, never back BROKEN" in result.stdout
    assert "grading.selectors -> reviews.models" in result.stdout


def test_a_pure_core_importing_django_breaks_its_contract(tree):
    append(tree / "grading" / "method" / "advantage.py", "from django.db import models  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "Pure cores import no Django, no models, no services, no views BROKEN" in result.stdout
    assert "grading.method.advantage is not allowed to import django" in result.stdout
