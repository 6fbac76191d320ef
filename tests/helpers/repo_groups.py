"""A group of real patches on a git repository built in the test (tests.helpers.gitrepos),
stored as ingest stores one, with the settings pointed at that repository: what the grader
workspace's tests (tools, the grading conversation, the files view, `manage.py workspace`)
share. Rollout 0 fixes mean([]); rollout 1 fixes it too but makes add() truncate floats;
rollout 2 failed with no patch; rollout 3 (passing) holds a patch written against a later
commit that cannot apply at the base, and a line of markup in a new file."""

from __future__ import annotations

from pathlib import Path

from grading.models import Group, Project
from tests.factories import make_group, make_run, make_step, make_task
from tests.helpers.gitrepos import TinyRepo, patch_at, tiny_package

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
