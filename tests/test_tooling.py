"""The lint configuration in pyproject.toml keeps its promises: every pure core (the import-linter
contract) is type-checked strictly, and none of them hides on mypy's ignore_errors list."""

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


def _covers(patterns: list[str], module: str) -> bool:
    return module in patterns or any(p.endswith(".*") and module.startswith(p[:-1]) for p in patterns)


def test_every_pure_core_is_checked_strictly():
    strict = _override("disallow_untyped_defs")
    assert [m for m in _pure_cores() if m not in strict] == []


def test_no_pure_core_is_on_the_ignore_errors_list():
    ignored = _override("ignore_errors")
    assert [m for m in ignored if any(m == core or m.startswith(core + ".") for core in _pure_cores())] == []
    assert not any(_covers(ignored, core) for core in _pure_cores())
