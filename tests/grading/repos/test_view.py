"""GitRepoView: reads, listings, greps and diffs at base and at rollouts' states, straight from the
mirror's objects; worktrees made once on demand, read-only, and cleaned up by age and size."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grading.repos.source import RepoSource
from grading.repos.types import PathRefused, RepoError
from grading.repos.view import MAX_READ_BYTES, GitRepoView, cleanup
from tests.helpers.gitrepos import MOVE_CALC, TinyRepo, edit, link, new_file, patch_at, snapshot, steps


@pytest.fixture
def view(source: RepoSource, tiny: TinyRepo) -> GitRepoView:
    patches = {
        0: patch_at(tiny, tiny.base, edit("tiny/calc.py", "return a + b", "return b + a  # --verbose")),
        1: patch_at(tiny, tiny.base, MOVE_CALC),
        2: new_file("../escape.txt"),
        3: patch_at(tiny, tiny.base, steps(link("etc-link", "/etc/passwd"), link("up", "../.."))),
    }
    return GitRepoView(source, tiny.repo, tiny.base, patches)


def test_nothing_touches_the_disk_until_the_first_call(tmp_path, tiny: TinyRepo):
    source = RepoSource(cache=tmp_path / "cache", url_template=tiny.template)
    view = GitRepoView(source, tiny.repo, tiny.base, {0: "", 1: new_file("x")})
    assert not (tmp_path / "cache").exists()
    assert view.read("base", "README.md") == b"# tiny\n\nAdds and averages.\n"
    assert source.fetches(tiny.repo) == 1 and not source.trees_dir.exists(), "reads make no worktree"


def test_read_at_base_and_at_a_state(view: GitRepoView):
    assert b"return a + b" in view.read("base", "tiny/calc.py")
    assert b"return b + a" in view.read(0, "./tiny/calc.py")
    assert view.read(1, "tiny/arith.py") == view.read("base", "tiny/calc.py")
    with pytest.raises(RepoError, match=r"no 'tiny/calc\.py'"):
        view.read(1, "tiny/calc.py")
    with pytest.raises(RepoError, match="is a directory"):
        view.read(0, "tiny")
    with pytest.raises(RepoError, match="not in this group"):
        view.read(9, "README.md")


@pytest.mark.parametrize(
    "path", ["../README.md", "/etc/passwd", ".git/config", "tiny/../../x", "a\x00b", "x\nb", "sub/.Git/HEAD"]
)
def test_paths_that_leave_the_tree_are_refused(view: GitRepoView, path):
    with pytest.raises(PathRefused):
        view.read("base", path)
    with pytest.raises(PathRefused):
        view.list("base", path)


def test_a_rollout_whose_patch_failed_says_why_everywhere(view: GitRepoView):
    assert view.applied()[2].how == "failed"
    for call in (
        lambda: view.read(2, "README.md"),
        lambda: view.list(2),
        lambda: view.grep(2, "add"),
        lambda: view.diff("", "base", 2),
        lambda: view.checkout(2),
    ):
        with pytest.raises(RepoError, match=r"rollout 2's patch did not apply: refused: .*escape\.txt"):
            call()


def test_links_are_listed_as_links_and_read_as_their_target(view: GitRepoView):
    entries = {e.name: e for e in view.list(3)}
    assert entries["etc-link"].kind == "symlink" and entries["tiny"].kind == "directory"
    assert entries["README.md"].kind == "file" and entries["README.md"].size == len(view.read(3, "README.md"))
    assert view.read(3, "etc-link") == b"/etc/passwd"  # the link's text, never the host's file
    assert [e.name for e in view.list("base", "docs")] == ["guide.md", "readme-link"]
    with pytest.raises(RepoError, match="not a directory"):
        view.list("base", "README.md")
    # A link to a directory is a link: nothing is read or listed through it.
    assert view.read("base", "docs-link") == b"docs"
    with pytest.raises(RepoError, match="not a directory"):
        view.list("base", "docs-link")
    with pytest.raises(RepoError, match=r"no 'docs-link/guide\.md'"):
        view.read("base", "docs-link/guide.md")


def test_a_file_bigger_than_a_read_returns_is_refused(source: RepoSource, tiny: TinyRepo):
    lines = MAX_READ_BYTES // 100 + 10
    big = new_file("big.txt", ("x" * 99 + "\n") * lines)
    view = GitRepoView(source, tiny.repo, tiny.base, {0: big})
    assert view.list(0)[0].name == "README.md" and any(e.size and e.size > MAX_READ_BYTES for e in view.list(0))
    with pytest.raises(RepoError, match="MB, more than"):
        view.read(0, "big.txt")


def test_grep_finds_lines_at_each_state(view: GitRepoView):
    found = view.grep(0, "return [ab] \\+", path="tiny")
    assert [(m.path, m.line, m.text) for m in found.matches] == [("tiny/calc.py", 2, "    return b + a  # --verbose")]
    assert not found.truncated and not found.timed_out
    assert [m.path for m in view.grep(1, "def add").matches] == ["tiny/arith.py"]
    assert view.grep("base", "DEF ADD", ignore_case=True).matches[0].path == "tiny/calc.py"
    assert view.grep("base", "a + b", fixed=True).matches[0].line == 2
    assert view.grep("base", "no such text anywhere", fixed=True).matches == []


def test_a_pattern_that_starts_with_a_dash_is_a_pattern(view: GitRepoView):
    found = view.grep(0, "--verbose", fixed=True)
    assert [m.path for m in found.matches] == ["tiny/calc.py"]
    assert [m.text for m in view.grep(0, "-v").matches] == ["    return b + a  # --verbose"], "'-v' is a pattern, not -v"
    with pytest.raises(RepoError, match="control characters"):
        view.grep(0, "a\nb")
    with pytest.raises(RepoError, match="empty pattern"):
        view.grep(0, "")
    with pytest.raises(RepoError, match="git grep failed"):
        view.grep(0, "(unclosed")


def test_grep_stops_at_max_matches_across_files_and_at_its_time(tmp_path, history: TinyRepo):
    source = RepoSource(cache=tmp_path / "cache", url_template=history.template)
    view = GitRepoView(source, history.repo, history.base, {})
    every = view.grep("base", ".", max_matches=25)  # every line of every file: a huge output
    assert len(every.matches) == 25 and every.truncated and not every.timed_out
    assert len({m.path for m in view.grep("base", "import", max_matches=40).matches}) > 1, "the bound is across files"
    view.grep_seconds = 0.0
    stopped = view.grep("base", ".")
    assert stopped.timed_out and stopped.truncated


def test_diff_between_states(view: GitRepoView):
    one = view.diff("tiny/calc.py", "base", 0)
    assert "-    return a + b\n+    return b + a  # --verbose" in one
    renamed = view.diff("", 0, 1)
    assert "rename from tiny/calc.py" in renamed and "rename to tiny/arith.py" in renamed
    assert view.diff("README.md", 0, 1) == ""
    assert "@@ -1,2 +1,2 @@" in view.diff("tiny/calc.py", "base", 0, context=0) or "@@ -2 +2 @@" in view.diff(
        "tiny/calc.py", "base", 0, context=0
    )


def test_checkout_is_made_once_read_only_and_equal_to_the_state(view: GitRepoView, tiny: TinyRepo):
    tree = view.checkout(3)
    assert tree.name == "r3" and tree.parent.name == view.key
    inode = tree.stat().st_ino
    assert view.checkout(3) == tree and tree.stat().st_ino == inode, "the second call reuses the tree"
    assert os.readlink(tree / "etc-link") == "/etc/passwd" and os.readlink(tree / "up") == "../.."
    for path in [tree, tree / "tiny", tree / "tiny/calc.py", tree / "scripts/run.sh"]:
        assert not stat.S_IMODE(path.lstat().st_mode) & 0o222, f"{path} is writable"
    assert (tree / "scripts/run.sh").lstat().st_mode & 0o100
    host = Path("/etc/passwd").stat()
    assert stat.S_IMODE(host.st_mode) & 0o200, "marking the tree read-only never went through its link"
    expected = snapshot(view.checkout("base"))
    expected.update({"etc-link": ("symlink", b"/etc/passwd", False), "up": ("symlink", b"../..", False)})
    assert snapshot(tree) == expected
    assert view.checkout("base").name == "base"


def test_cleanup_removes_old_trees_then_the_least_recently_used(view: GitRepoView):
    old, middle, new = view.checkout("base"), view.checkout(0), view.checkout(1)
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    os.utime(middle, (hour_ago + 60, hour_ago + 60))
    assert cleanup(view.trees_dir, max_age_s=3570, max_bytes=10**12) == [old]
    assert not old.exists() and middle.exists() and new.exists()
    assert cleanup(view.trees_dir, max_age_s=10**9, max_bytes=1) == [middle, new]
    assert not any(p for p in view.trees_dir.rglob("*") if p.is_dir())
    assert view.checkout("base").is_dir(), "made again on demand"


def test_a_checkout_is_a_working_package_whose_tests_run(source: RepoSource, tiny: TinyRepo):
    broken = patch_at(tiny, tiny.base, edit("tiny/calc.py", "return a + b", "return a - b"))
    view = GitRepoView(source, tiny.repo, tiny.base, {0: broken})

    def run_tests(tree: Path) -> int:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
        return subprocess.run(command, cwd=tree, env=env, capture_output=True, check=False, timeout=120).returncode

    assert run_tests(view.checkout("base")) == 0
    assert run_tests(view.checkout(0)) == 1
    assert snapshot(view.checkout(0)).keys() == snapshot(view.checkout("base")).keys(), "the runs left nothing behind"
