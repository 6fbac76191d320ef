"""A group of real patches on a git repository built in the test (tests.helpers.gitrepos),
stored as ingest stores one, with the settings pointed at that repository: what the grader
workspace's tests (tools, the grading conversation, the files view, `manage.py workspace`)
share. Rollout 0 fixes mean([]); rollout 1 fixes it too but makes add() truncate floats;
rollout 2 failed with no patch; rollout 3 (passing) holds a patch written against a later
commit that cannot apply at the base, and a line of markup in a new file. `diverging_group`:
three passing fixes that disagree, each with a test of its own (the differential matrix's)."""

from __future__ import annotations

from pathlib import Path

from grading.models import Group, Project
from tests.factories import make_group, make_run, make_step, make_task
from tests.helpers.gitrepos import TinyRepo, commit_all, init_repo, patch_at, tiny_package

HOSTILE_LINE = '<script>alert("file")</script>'


def fix_mean(work: Path) -> None:
    calc = work / "tiny/calc.py"
    text = calc.read_text()
    calc.write_text(text.replace("    return total / len(values)\n", "    return total / len(values) if values else 0.0\n"))


def truncate_add(work: Path) -> None:
    fix_mean(work)
    calc = work / "tiny/calc.py"
    calc.write_text(calc.read_text().replace("    return a + b\n", "    return int(a + b)\n"))
    (work / "tiny/notes.html").write_text(HOSTILE_LINE + "\n")


def upstream_edit(work: Path) -> None:
    calc = work / "tiny/calc.py"
    calc.write_text(calc.read_text().replace("def add(a, b):  # upstream: the sum", "def add(a, b):  # mine"))


def tiny_group(root: Path, settings, project: Project, *, uid: str = "tiny-1@1") -> tuple[Group, TinyRepo]:
    tiny = tiny_package(root / "git")
    settings.GAGAR_REPO_URL_TEMPLATE = tiny.template
    settings.GAGAR_REPO_CACHE = str(root / "cache")
    run = make_run(project, grading_deadline_seconds=600)
    task = make_task(
        run, uid.rsplit("@", 1)[0], repo=tiny.repo, base_commit=tiny.base, problem_statement="mean([]) should be 0.0"
    )
    patches = {
        0: patch_at(tiny, tiny.base, fix_mean),
        1: patch_at(tiny, tiny.base, truncate_add),
        2: "",
        3: patch_at(tiny, tiny.commits[2], upstream_edit),
    }
    group = make_group(
        uid, step=make_step(run), task=task, rewards=(1, 1, 0, 1), rollouts={i: {"patch": p} for i, p in patches.items()}
    )
    return group, tiny


# A pure-Python repository whose `mean([])` raises, and three fixes that all pass the task's own
# test (`test_mean`) yet disagree on the empty case: rollouts 0 and 2 return 0.0 (as the gold
# patch does), rollout 1 returns None. Each adds its own test of the empty case, in a file of
# its own or beside the task's test, as a function or a method; rollout 3 failed.
STATS_FILES = {
    "stats/__init__.py": "",
    "stats/core.py": "def mean(values):\n    return sum(values) / len(values)\n",
    "tests/test_core.py": "from stats.core import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n",
}


def _edit(path: str, old: str, new: str):
    def edit(work: Path) -> None:
        target = work / path
        text = target.read_text() if target.exists() else ""
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace(old, new) if old else text + new)

    return edit


def _steps(*edits):
    def edit(work: Path) -> None:
        for step in edits:
            step(work)

    return edit


RETURNS = "    return sum(values) / len(values)\n"
DIVERGING = {
    0: _steps(
        _edit("stats/core.py", RETURNS, "    return sum(values) / len(values) if values else 0.0\n"),
        _edit("tests/test_core.py", "", "\n\ndef test_mean_of_nothing_is_zero():\n    assert mean([]) == 0.0\n"),
    ),
    1: _steps(
        _edit("stats/core.py", RETURNS, "    if not values:\n        return None\n" + RETURNS),
        _edit(
            "tests/test_empty.py",
            "",
            "from stats.core import mean\n\n\ndef test_mean_of_nothing_is_none():\n    assert mean([]) is None\n",
        ),
    ),
    2: _steps(
        _edit("stats/core.py", RETURNS, "    if len(values) == 0:\n        return 0.0\n" + RETURNS),
        _edit("tests/test_core.py", "", "\n\nclass TestEmpty:\n    def test_zero(self):\n        assert mean([]) == 0\n"),
    ),
}
GOLD_FIX = _edit("stats/core.py", RETURNS, "    if not values:\n        return 0.0\n" + RETURNS)
TASK_TEST = _edit("tests/test_core.py", "", "\n\ndef test_mean_empty():\n    assert mean([]) == 0.0\n")


def diverging_group(root: Path, settings, project: Project, *, gold: bool = True, uid: str = "stats-1@1") -> Group:
    """The group above, stored as ingest stores one, with the settings pointed at its repository;
    with the task's gold and test patches when `gold`."""
    path = init_repo(root / "git" / "acme/stats")
    for name, text in STATS_FILES.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    base = commit_all(path, "stats: mean")
    repo = TinyRepo(root=root / "git", repo="acme/stats", path=path, base=base, commits=[base])
    settings.GAGAR_REPO_URL_TEMPLATE = repo.template
    settings.GAGAR_REPO_CACHE = str(root / "cache")
    run = make_run(project, grading_deadline_seconds=600)
    references = {"gold_patch": patch_at(repo, base, GOLD_FIX), "test_patch": patch_at(repo, base, TASK_TEST)} if gold else {}
    task = make_task(
        run,
        uid.rsplit("@", 1)[0],
        repo=repo.repo,
        base_commit=base,
        problem_statement="mean([]) raises ZeroDivisionError",
        **references,
    )
    patches = {i: patch_at(repo, base, edit) for i, edit in DIVERGING.items()}
    return make_group(
        uid,
        step=make_step(run),
        task=task,
        rewards=(1, 1, 1, 0),
        rollouts={**{i: {"patch": p} for i, p in patches.items()}, 3: {"patch": ""}},
    )
