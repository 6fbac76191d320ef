"""The layers hold, and the contracts would catch a new back-edge.

`make check` runs import-linter on the tree; these tests run it on a copy of the packages
with one deliberate violation each, so a contract that stopped checking anything fails here.
"""

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


def test_a_view_importing_another_view_breaks_their_independence(tree):
    append(tree / "reviews" / "views" / "judge.py", "from reviews.views.group import render_group  # noqa")
    result = lint(tree)
    assert result.returncode != 0
    assert "A view module imports no other view module BROKEN" in result.stdout
    assert "reviews.views.judge -> reviews.views.group" in result.stdout


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
        ("grading/selectors.py", 'LINK = reverse("calibration", args=["acme"])  # noqa', "URL 'calibration'"),
        ("grading/views/pages.py", 'BACK = redirect("reviews:queue")  # noqa', "URL 'reviews:queue'"),
        ("grading/views/team.py", 'PAGE = "reviews/queue.html"  # noqa', "template 'reviews/queue.html'"),
    ],
)
def test_grading_naming_a_reviews_url_or_template_is_caught(grading_tree, where, line, caught):
    assert upward_references(grading_tree) == []
    append(grading_tree / where, line)
    (found,) = upward_references(grading_tree)
    assert found.startswith(f"{where}:") and found.endswith(caught)
