"""make audit's bandit triage (tests/hostile/audit.py): an assert that only narrows a type for
mypy, with its reason on the line, is not a finding; any other assert still is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("gagar_audit", HERE / "audit.py")
assert _spec and _spec.loader
audit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(audit)


@pytest.mark.parametrize(
    ("line", "narrowing"),
    [
        ("        assert self.proc.stdout is not None  # Popen(stdout=PIPE)", True),
        ("    assert saved.draft_saved_at is not None  # save_draft sets it", True),
        ("    assert request.user.is_staff  # only staff get here", False),  # a check, not a narrowing
        ("    assert token is not None", False),  # no reason given on the line
        ("    assert user.role == 'admin' is not None  # odd", False),
        ("    x = 1  # assert y is not None  # z", False),
    ],
)
def test_only_a_none_narrowing_with_its_reason_is_set_aside(tmp_path, monkeypatch, line, narrowing):
    source = tmp_path / "m.py"
    source.write_text(f"def f():\n{line}\n", encoding="utf-8")
    monkeypatch.setattr(audit, "ROOT", tmp_path)
    issue = {"test_id": "B101", "filename": "./m.py", "line_number": 2}
    assert audit._narrowing_assert(issue) is narrowing


def test_other_findings_on_such_a_line_are_not_set_aside(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text("assert x is not None  # why\n", encoding="utf-8")
    monkeypatch.setattr(audit, "ROOT", tmp_path)
    assert audit._narrowing_assert({"test_id": "B105", "filename": "m.py", "line_number": 1}) is False
