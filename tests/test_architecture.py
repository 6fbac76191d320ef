"""The layers hold, and the contracts would catch a new back-edge.

`make check` runs import-linter on the tree; these tests run it on a copy of the packages
with one deliberate violation each, so a contract that stopped checking anything fails here.
"""

import json
import re
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
    append(tree / "grading" / "selectors" / "runs.py", "from reviews.models import Judgment  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "Layers: gagar_web -> reviews -> grading, never back BROKEN" in result.stdout
    assert "grading.selectors.runs -> reviews.models" in result.stdout


def test_a_pure_core_importing_django_breaks_its_contract(tree):
    append(tree / "grading" / "method" / "advantage.py", "from django.db import models  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "Pure cores import no Django, no models, no services, no views BROKEN" in result.stdout
    assert "grading.method.advantage is not allowed to import django" in result.stdout


def test_a_view_importing_another_view_breaks_their_independence(tree):
    append(tree / "reviews" / "views" / "judge.py", "from reviews.views.group import render_group  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "A view module imports no other view module BROKEN" in result.stdout
    assert "reviews.views.judge -> reviews.views.group" in result.stdout


def test_a_registry_module_importing_a_job_breaks_the_grading_order(tree):
    append(tree / "grading" / "registry" / "versions.py", "from grading.jobs.grade import grade_group  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "Grading runs one way: jobs -> waits -> verdicts -> registry -> grader BROKEN" in result.stdout
    assert "grading.registry.versions -> grading.jobs.grade" in result.stdout


def test_the_pure_grader_importing_a_stored_verdict_breaks_its_contract(tree):
    append(tree / "grading" / "grader" / "heuristic.py", "from grading.verdicts.store import record_verdict  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "Pure cores import no Django, no models, no services, no views BROKEN" in result.stdout
    assert "grading.grader is not allowed to import grading.verdicts" in result.stdout
    assert "grading.grader.heuristic -> grading.verdicts.store" in result.stdout


def test_a_service_importing_a_tasks_module_breaks_the_by_name_rule(tree):
    append(tree / "grading" / "verdicts" / "store.py", "from grading.jobs.tasks import grade_group_task  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "Only workers import a tasks module: services send tasks by name BROKEN" in result.stdout
    assert "grading.verdicts.store -> grading.jobs.tasks" in result.stdout


# --- no import circles ------------------------------------------------------------------------
# import-linter holds layers between packages; a circle inside one (two services importing each
# other, a module importing its own tasks) is invisible to it. This walks the import graph of the
# app modules (every import, also those inside functions and under TYPE_CHECKING) and names each
# strongly connected set of modules.

CYCLES = """
import json, sys
import grimp
graph = grimp.build_graph("gagar_web", "grading", "reviews", cache_dir=None)
modules = sorted(m for m in graph.modules if ".migrations" not in m)
known = set(modules)
edges = {m: sorted(graph.find_modules_directly_imported_by(m) & known) for m in modules}
index, low, stack, on, found = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index); stack.append(v); on.add(v)
    for w in edges[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        part = []
        while True:
            w = stack.pop(); on.discard(w); part.append(w)
            if w == v:
                break
        if len(part) > 1:
            found.append(sorted(part))
sys.setrecursionlimit(10000)
for m in modules:
    if m not in index:
        visit(m)
print(json.dumps(found))
"""


def import_cycles(tree: Path) -> list[list[str]]:
    result = subprocess.run(
        [sys.executable, "-c", CYCLES],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    return json.loads(result.stdout)


def test_no_import_circle_among_the_app_modules():
    assert import_cycles(ROOT) == []


def test_a_service_importing_its_caller_back_is_a_circle(tree):
    # grade -> scans -> workspaces, and now workspaces -> grade: all three are one circle
    append(tree / "grading" / "registry" / "workspaces.py", "from grading.jobs import grade  # noqa")
    assert ["grading.jobs.grade", "grading.jobs.scans", "grading.registry.workspaces"] in import_cycles(tree)


# --- what import-linter cannot see: URL names and template names ---------------------------
# grading must not name a URL that reviews' URLconf defines, nor a template under
# templates/reviews/: either is a dependency upward, through strings. What both apps use (the
# group page, the project's tabs) is the site's: gagar_web/urls.py, templates/ itself.

URL_NAME = re.compile(r"""\bname\s*=\s*["']([\w-]+)["']""")
NAMED_URL = re.compile(r"""(?:\breverse(?:_lazy)?\(|\bredirect\(|\{%\s*url)\s*["']([\w:-]+)["']""")
REVIEWS_TEMPLATE = re.compile(r"""["'](reviews/[^"']+\.html)""")


def reviews_url_names(tree: Path) -> set[str]:
    return set(URL_NAME.findall((tree / "reviews" / "urls.py").read_text()))


def grading_files(tree: Path) -> list[Path]:
    """grading's modules and templates: the package (templatetags included) and templates/grading/."""
    files = [p for p in (tree / "grading").rglob("*") if p.suffix in (".py", ".html") and "migrations" not in p.parts]
    return files + sorted((tree / "templates" / "grading").rglob("*.html"))


def upward_references(tree: Path) -> list[str]:
    """`path:line: what` for each reviews URL name or reviews template a grading file names."""
    names = reviews_url_names(tree)
    found = []
    for path in grading_files(tree):
        for number, text in enumerate(path.read_text().splitlines(), 1):
            for name in NAMED_URL.findall(text):
                if name.startswith("reviews:") or name in names:
                    found.append(f"{path.relative_to(tree)}:{number}: URL {name!r}")
            for template in REVIEWS_TEMPLATE.findall(text):
                found.append(f"{path.relative_to(tree)}:{number}: template {template!r}")
    return found


@pytest.fixture
def grading_tree(tmp_path):
    """A copy of what upward_references reads: grading, reviews/urls.py, templates/grading."""
    shutil.copytree(ROOT / "grading", tmp_path / "grading", ignore=shutil.ignore_patterns("__pycache__", "migrations"))
    (tmp_path / "reviews").mkdir()
    shutil.copy(ROOT / "reviews" / "urls.py", tmp_path / "reviews" / "urls.py")
    shutil.copytree(ROOT / "templates" / "grading", tmp_path / "templates" / "grading")
    return tmp_path


def test_grading_names_no_url_or_template_of_reviews():
    assert "review-queue" in reviews_url_names(ROOT)  # the URLconf is read, not an empty set
    assert upward_references(ROOT) == []


@pytest.mark.parametrize(
    ("where", "line", "caught"),
    [
        ("templates/grading/run.html", "<a href=\"{% url 'review-queue' project.name %}\">judge</a>", "URL 'review-queue'"),
        ("templates/grading/step.html", '{% include "reviews/group.html" %}', "template 'reviews/group.html'"),
        ("grading/selectors/runs.py", 'LINK = reverse("calibration", args=["acme"])  # noqa', "URL 'calibration'"),
        ("grading/views/pages.py", 'BACK = redirect("reviews:queue")  # noqa', "URL 'reviews:queue'"),
        ("grading/views/team.py", 'PAGE = "reviews/queue.html"  # noqa', "template 'reviews/queue.html'"),
    ],
)
def test_grading_naming_a_reviews_url_or_template_is_caught(grading_tree, where, line, caught):
    assert upward_references(grading_tree) == []
    append(grading_tree / where, line)
    (found,) = upward_references(grading_tree)
    assert found.startswith(f"{where}:") and found.endswith(caught)
