"""The grader's repository tools (grading.grader.tools) on a real git repository built in the
test: reading and listing at the base commit and at a rollout's state, searching the code,
diffing one file between rollouts, the files a patch touches, and `file:` citations resolving
(grading.grader.evidence). No database, no model: the tools as any backend calls them."""

from __future__ import annotations

import pytest

from grading.grader.base import Evidence
from grading.grader.evidence import resolve
from grading.grader.tools import call_tool
from grading.grader.workspace import GroupWorkspace, RolloutView
from grading.repos.source import RepoSource
from grading.repos.view import GitRepoView
from tests.helpers.gitrepos import patch_at, tiny_package
from tests.helpers.repo_groups import fix_mean, upstream_edit


def rename_and_add(work):
    fix_mean(work)
    (work / "README.md").rename(work / "README.rst")
    (work / "tiny/extra.py").write_text("from tiny.calc import add\n\n\ndef twice(x):\n    return add(x, x)\n")


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo-tools")
    tiny = tiny_package(root / "git")
    patches = {
        0: patch_at(tiny, tiny.base, fix_mean),
        1: patch_at(tiny, tiny.base, rename_and_add),
        2: patch_at(tiny, tiny.commits[2], upstream_edit),  # written against a later commit: cannot apply at base
        3: "",
    }
    view = GitRepoView(RepoSource(cache=root / "cache", url_template=tiny.template), tiny.repo, tiny.base, patches)
    rollouts = [RolloutView(index=i, passed=i != 3, patch=p) for i, p in patches.items()]
    return GroupWorkspace(
        uid="tiny@1", instance_id="tiny-1", repo=tiny.repo, base_commit=tiny.base, rollouts=rollouts, repo_view=view
    )


def lines(result):
    return [(line["locator"], line["text"]) for line in result["lines"]]


def test_a_file_reads_at_the_base_commit_and_as_each_rollout_left_it(group):
    base = call_tool(group, "read_file", {"path": "tiny/calc.py", "start": 9, "count": 1})
    mine = call_tool(group, "read_file", {"path": "tiny/calc.py", "rollout": 0, "start": 9, "count": 1})
    assert lines(base) == [("base:tiny/calc.py:9", "    return total / len(values)")]
    assert lines(mine) == [("0:tiny/calc.py:9", "    return total / len(values) if values else 0.0")]
    assert base["total_lines"] == mine["total_lines"] == 10  # the trailing newline's empty line, as logs count
    listing = call_tool(group, "read_file", {"path": "", "rollout": 1})
    assert listing["directory"] and "README.rst" in listing["entries"] and "README.md" not in listing["entries"]
    assert "tiny/" in listing["entries"] and "docs/" in listing["entries"]
    assert call_tool(group, "read_file", {"path": "tiny", "rollout": 1})["entries"] == ["__init__.py", "calc.py", "extra.py"]
    assert "binary" in call_tool(group, "read_file", {"path": "data/logo.bin"})["error"]


@pytest.mark.parametrize(
    "path",
    ["../../etc/passwd", "/etc/passwd", "tiny/../../x", ".git/config", "docs-link/guide.md", "nope.py"],
)
def test_a_path_outside_the_tree_or_not_in_it_is_an_error_not_a_read(group, path):
    result = call_tool(group, "read_file", {"path": path})
    assert set(result) == {"error"}, result


def test_a_rollout_whose_patch_does_not_apply_says_so(group):
    touched = call_tool(group, "touched_files", {"rollout": 2})
    assert touched["patch_applies"] is False and touched["state"]["how"] == "failed" and touched["state"]["error"]
    assert "did not apply" in call_tool(group, "read_file", {"path": "tiny/calc.py", "rollout": 2})["error"]
    assert "rollout 9 does not exist" in call_tool(group, "read_file", {"path": "x", "rollout": 9})["error"]


def test_search_finds_the_callers_at_either_state_within_its_bounds(group):
    base = call_tool(group, "search_code", {"pattern": "add(", "fixed": True})
    assert {m["path"] for m in base["matches"]} == {"tiny/calc.py", "tests/test_calc.py"}
    assert all(m["locator"] == f"base:{m['path']}:{m['line']}" for m in base["matches"])
    after = call_tool(group, "search_code", {"pattern": "add(", "fixed": True, "rollout": 1})
    assert "tiny/extra.py" in {m["path"] for m in after["matches"]}
    one = call_tool(group, "search_code", {"pattern": "a", "max_matches": 1})
    assert len(one["matches"]) == 1 and one["truncated"] is True
    dashed = call_tool(group, "search_code", {"pattern": "--output=/tmp/x"})  # a pattern, never an option
    assert dashed["matches"] == [] and "error" not in dashed
    assert "at most 1000 characters" in call_tool(group, "search_code", {"pattern": "x" * 1001})["error"]


def test_two_rollouts_versions_of_a_file_compare(group):
    same = call_tool(group, "diff_file", {"path": "tiny/calc.py", "rollout": 1, "against": 0})
    assert same["identical"] is True
    against_base = call_tool(group, "diff_file", {"path": "tiny/calc.py", "rollout": 0})
    assert against_base["from"] == "base" and against_base["to"] == 0
    assert "if values else 0.0" in against_base["files"][0]["diff"]["text"]


def test_the_touched_files_come_with_their_surrounding_code(group):
    touched = call_tool(group, "touched_files", {"rollout": 1, "context": 3})
    assert touched["patch_applies"] and touched["state"]["how"] == "clean"
    assert {f["path"] for f in touched["files"]} == {"tiny/calc.py", "README.rst", "tiny/extra.py"}
    assert call_tool(group, "touched_files", {"rollout": 3})["files"] == []


@pytest.mark.parametrize(
    ("rollout", "locator", "why"),
    [
        (0, "0:tiny/calc.py:9", None),
        (0, "base:tiny/calc.py:1", None),
        (1, "1:tiny/extra.py:5", None),
        (1, "0:tiny/extra.py:1", "no 'tiny/extra.py'"),  # rollout 0 never made that file
        (0, "0:tiny/calc.py:99", "has no line 99"),
        (2, "2:tiny/calc.py:1", "did not apply"),
        (0, "7:tiny/calc.py:1", "rollout 7 does not exist"),
        (0, "tiny/calc.py:1", "must be '<rollout|base>:<path>:<line>'"),
        (0, "base:../../etc/passwd:1", "passwd"),
    ],
)
def test_file_citations_resolve_against_the_state_they_name(group, rollout, locator, why):
    problem = resolve(group, Evidence("file", rollout, locator))
    if why is None:
        assert problem is None
    else:
        assert problem is not None and why in problem
