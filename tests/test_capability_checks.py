"""Capabilities are checked by name (grading.models.Capability), never by their strings.

A check spelled `"manage" in membership.capabilities` in a view, or `{% if "review" in caps %}`
in a template, still runs if the capability is renamed and silently answers no. These tests
scan every module and template for such a spelling, and check on planted lines that the scan
would see one.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from grading.models import Capability

ROOT = Path(__file__).resolve().parents[1]
DEFINITION = ROOT / "grading" / "models" / "projects.py"
CAPABILITIES = frozenset(Capability.values)
# The functions that take the capabilities a request needs (grading.projects.access,
# grading.api.scoping and the API modules' own thin wrappers of them).
ACCESS_HELPERS = frozenset(
    {
        "get_project_for",
        "page_project",
        "page_run",
        "page_group",
        "project_for_request",
        "membership_for_request",
        "_project",
        "_run",
        "_step",
    }
)
_ALTERNATIVES = "|".join(sorted(CAPABILITIES))
TEMPLATE_CHECK = re.compile(rf"""(["'])({_ALTERNATIVES})\1\s+(?:not\s+)?in\b""")


def _is_capability(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in CAPABILITIES


def _names_capabilities(node: ast.AST) -> bool:
    text = ast.unparse(node)
    return "capabilit" in text or re.search(r"\bcaps\b", text) is not None


def python_spellings(source: str) -> list[int]:
    """Lines of `source` that check a capability by its string: `"x" in <capabilities>`, an
    access helper given `"x"`, or a collection of two or more capability strings."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
                if isinstance(op, ast.In | ast.NotIn) and _is_capability(left) and _names_capabilities(right):
                    lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in ACCESS_HELPERS and any(_is_capability(arg) for arg in node.args):
                lines.append(node.lineno)
        elif isinstance(node, ast.Set | ast.Tuple | ast.List):
            if len(node.elts) >= 2 and all(_is_capability(e) for e in node.elts):
                lines.append(node.lineno)
    return lines


def template_spellings(text: str) -> list[int]:
    return [text.count("\n", 0, m.start()) + 1 for m in TEMPLATE_CHECK.finditer(text)]


def test_no_module_checks_a_capability_by_its_string():
    found = []
    for package in ("gagar_web", "grading", "reviews"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == DEFINITION or "migrations" in path.parts:
                continue
            found += [f"{path.relative_to(ROOT)}:{n}" for n in python_spellings(path.read_text())]
    assert not found, "use grading.models.Capability, not its string: " + ", ".join(found)


def test_no_template_checks_a_capability_by_its_string():
    found = []
    for path in sorted(ROOT.glob("**/templates/**/*.html")):
        if ".venv" in path.parts:
            continue
        found += [f"{path.relative_to(ROOT)}:{n}" for n in template_spellings(path.read_text())]
    assert not found, "use {% if Capability.X in caps %}, not the string: " + ", ".join(found)


def test_the_scans_see_a_planted_string_check():
    planted = """
if "manage" in membership.capabilities:
    pass
can_judge = "review" not in caps
project, membership = page_project(request, project, "view")
SEES = frozenset({"audit", "adjudicate"})
"""
    assert python_spellings(planted) == [2, 4, 5, 6]
    assert template_spellings("{% if \"review\" in caps %}\n{% if 'manage' not in membership.capabilities %}") == [1, 2]


def test_the_scans_leave_other_strings_alone():
    fine = """
if "audit" in frame.columns:
    pass
mode = "auto" if mode == "adjudicate" else mode
frame.drop(columns=["audit"])
if Capability.MANAGE in membership.capabilities:
    pass
"""
    assert python_spellings(fine) == []
    assert template_spellings('{% include "reviews/nav.html" with active="review" %}{% if Capability.REVIEW in caps %}') == []
