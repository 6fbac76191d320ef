"""The lint configuration in pyproject.toml keeps its promises: every pure core (the import-linter
contract) is type-checked strictly, and no module hides on an ignore_errors list of mypy's."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())


def _pure_cores() -> list[str]:
    contracts = PYPROJECT["tool"]["importlinter"]["contracts"]
    (pure,) = [c for c in contracts if c["name"].startswith("Pure cores")]
    return pure["source_modules"]


def _override(flag: str) -> list[str]:
    (override,) = [o for o in PYPROJECT["tool"]["mypy"]["overrides"] if o.get(flag)]
    return override["module"]


def test_every_pure_core_is_checked_strictly():
    strict = _override("disallow_untyped_defs")
    assert [m for m in _pure_cores() if m not in strict] == []


def test_no_module_hides_on_an_ignore_errors_list():
    assert [o["module"] for o in PYPROJECT["tool"]["mypy"]["overrides"] if o.get("ignore_errors")] == []
