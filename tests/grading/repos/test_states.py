"""A rollout's patch applied at the base commit as a commit of its own: what applies (as is or
3-way), what conflicts, what is refused for leaving the tree, binary changes without data, links,
modes; and every usable state's tree equals a plain `git apply` on a fresh clone at the base."""

from __future__ import annotations

import os

import pytest

from grading.repos.source import RepoSource
from grading.repos.states import scan
from grading.repos.view import GitRepoView
from tests.helpers.gitrepos import (
    MOVE_CALC,
    TinyRepo,
    chmod,
    delete,
    edit,
    function_file,
    link,
    new_file,
    patch_at,
    plain_apply,
    rename,
    snapshot,
    steps,
)


def usable_trees_equal_plain_apply(view: GitRepoView, repo: TinyRepo, patches: dict[int, str]) -> int:
    """Compare every usable state's checkout with a plain `git apply` on a fresh clone; how many were compared."""
    compared = 0
    for index, state in view.applied().items():
        if not state.usable or state.how == "partial":
            continue
        expected = plain_apply(repo, view.base_commit, patches[index], three_way=state.how == "three_way")
        assert snapshot(view.checkout(index)) == expected, f"rollout {index} ({state.how}) differs from git apply"
        compared += 1
    return compared


def test_patches_that_apply_make_the_same_trees_as_git_apply(source: RepoSource, tiny: TinyRepo):
    patches = {
        0: patch_at(tiny, tiny.base, edit("tiny/calc.py", "return total / len(values)", "return total / max(1, len(values))")),
        1: patch_at(tiny, tiny.base, steps(lambda w: (w / "tiny/stats.py").write_text("def median(v):\n    return v\n"))),
        2: patch_at(tiny, tiny.base, delete("README.md")),
        3: patch_at(tiny, tiny.base, MOVE_CALC),
        4: patch_at(tiny, tiny.base, chmod("README.md", 0o755)),
        5: patch_at(tiny, tiny.base, chmod("scripts/run.sh", 0o644)),
        6: patch_at(tiny, tiny.base, steps(link("etc-link", "/etc/passwd"), link("up", "../.."), link("deep/up2", "../../../x"))),
        7: patch_at(tiny, tiny.base, lambda w: (w / "data/logo.bin").write_bytes(b"\0new binary\xff"), binary=True),
        8: patch_at(tiny, tiny.base, steps(delete("docs-link"), link("docs-link", "tiny"))),
        9: "",
    }
    view = GitRepoView(source, tiny.repo, tiny.base, patches)
    applied = view.applied()
    assert {i: a.how for i, a in applied.items()} == {**dict.fromkeys(range(9), "clean"), 9: "base"}, applied
    assert applied[9].commit == tiny.base
    assert len({a.commit for a in applied.values()}) == 10
    assert usable_trees_equal_plain_apply(view, tiny, patches) == 10
    # A link the patch adds is stored as a link, whatever it points at; reading it gives its target.
    assert view.read(6, "etc-link") == b"/etc/passwd" and view.read(6, "up") == b"../.."
    kinds = {e.name: e.kind for e in view.list(6)}
    assert kinds["etc-link"] == kinds["up"] == "symlink" and kinds["tiny"] == "directory"
    assert os.readlink(view.checkout(6) / "etc-link") == "/etc/passwd"


def test_the_same_patch_on_the_same_base_is_the_same_commit_in_any_cache(tmp_path, tiny: TinyRepo):
    patch = patch_at(tiny, tiny.base, edit("README.md", "Adds", "Sums"))
    commits = {
        GitRepoView(RepoSource(cache=tmp_path / f"c{i}", url_template=tiny.template), tiny.repo, tiny.base, {3: patch})
        .applied()[3]
        .commit
        for i in range(2)
    }
    assert len(commits) == 1 and None not in commits


def test_a_patch_written_after_the_base_applies_3_way_or_conflicts(source: RepoSource, tiny: TinyRepo):
    later = tiny.commits[2]  # changed add()'s line after the base
    merges = patch_at(tiny, later, edit("tiny/calc.py", "    return a + b\n\n", "    return a + b\n# agent\n"))
    conflicts = patch_at(tiny, later, edit("tiny/calc.py", "def add(a, b):  # upstream: the sum", "def add(a, b, c=0):"))
    view = GitRepoView(source, tiny.repo, tiny.base, {0: merges, 1: conflicts})
    applied = view.applied()
    assert applied[0].how == "three_way" and applied[0].usable
    assert b"# agent" in view.read(0, "tiny/calc.py") and b"upstream" not in view.read(0, "tiny/calc.py")
    assert applied[1].how == "failed" and applied[1].commit is None
    assert "does not apply" in applied[1].error and "calc.py" in applied[1].error
    assert usable_trees_equal_plain_apply(view, tiny, {0: merges, 1: conflicts}) == 1


def test_binary_changes_without_their_data_are_skipped_and_said(source: RepoSource, tiny: TinyRepo):
    both = patch_at(
        tiny, tiny.base, steps(lambda w: (w / "data/logo.bin").write_bytes(b"\0x"), edit("README.md", "Adds", "Sums"))
    )
    only_binary = patch_at(tiny, tiny.base, lambda w: (w / "data/new.bin").write_bytes(b"\0\1\2"))
    assert "Binary files a/data/logo.bin and b/data/logo.bin differ" in both
    view = GitRepoView(source, tiny.repo, tiny.base, {0: both, 1: only_binary})
    applied = view.applied()
    assert applied[0].how == "partial" and applied[0].skipped == ("data/logo.bin",)
    assert view.read(0, "README.md").startswith(b"# tiny\n\nSums")
    assert view.read(0, "data/logo.bin") == view.read("base", "data/logo.bin")
    assert applied[1].how == "partial" and applied[1].skipped == ("data/new.bin",) and applied[1].commit == tiny.base


LEAVING = {
    "dotdot": new_file("../outside.txt"),
    "deep dotdot": new_file("tiny/../../outside.txt"),
    "absolute": "--- /dev/null\n+++ /etc/cron.d/x\n@@ -0,0 +1 @@\n+x\n",
    "absolute in git header": (
        "diff --git a//tmp/x b//tmp/x\nnew file mode 100644\n--- /dev/null\n+++ b//tmp/x\n@@ -0,0 +1 @@\n+x\n"
    ),
    "dot git": new_file(".git/config", "[core]\n\thooksPath = /tmp\n"),
    "dot git, other case": new_file("sub/.GIT/hooks/post-checkout"),
    "rename into .git": (
        "diff --git a/README.md b/.git/README.md\nsimilarity index 100%\nrename from README.md\nrename to .git/README.md\n"
    ),
    "quoted dotdot": (
        'diff --git "a/\\056\\056/x" "b/\\056\\056/x"\nnew file mode 100644\n'
        '--- /dev/null\n+++ "b/\\056\\056/x"\n@@ -0,0 +1 @@\n+x\n'
    ),
    "through a link at base": new_file("docs-link/evil.md"),
    "through a link the patch adds": new_file("out", "/etc\n", mode="120000") + new_file("out/passwd", "root::0:0::/:/bin/sh\n"),
}


@pytest.mark.parametrize("name", list(LEAVING))
def test_paths_that_leave_the_tree_are_refused_and_recorded(source: RepoSource, tiny: TinyRepo, name):
    view = GitRepoView(source, tiny.repo, tiny.base, {0: LEAVING[name], 1: ""})
    state = view.applied()[0]
    assert state.how == "failed" and state.commit is None
    assert state.error.startswith("refused: ") and ("leave the repository's tree" in state.error), state.error
    assert view.applied()[1].how == "base", "one refused patch spoils nothing else"


def test_hunk_lines_that_look_like_headers_are_content(source: RepoSource, tiny: TinyRepo):
    text = "--- ../../etc/passwd\n+++ /etc/shadow\n--- .git/config\n"
    patch = patch_at(tiny, tiny.base, edit("README.md", "Adds and averages.\n", "Adds and averages.\n" + text))
    view = GitRepoView(source, tiny.repo, tiny.base, {0: patch})
    assert view.applied()[0].how == "clean"
    assert view.read(0, "README.md").endswith(text.encode())
    # A removed "-- ../../etc/passwd" and an added "++ /etc/shadow" of an SQL file, read as content.
    sql = "diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- ../../etc/passwd\n+++ /etc/shadow\n keep\n"
    assert scan(sql).paths == ["q.sql"] * 4


def test_a_plain_unified_diff_without_git_headers_applies(source: RepoSource, tiny: TinyRepo):
    patch = "--- a/README.md\t2024-01-01\n+++ b/README.md\t2024-01-02\n@@ -1,3 +1,3 @@\n # tiny\n \n-Adds and averages.\n+Adds.\n"
    view = GitRepoView(source, tiny.repo, tiny.base, {0: patch})
    assert view.applied()[0].how == "clean"
    assert view.read(0, "README.md") == b"# tiny\n\nAdds.\n"


def test_garbage_fails_with_a_reason(source: RepoSource, tiny: TinyRepo):
    view = GitRepoView(source, tiny.repo, tiny.base, {0: "this is not a patch\n", 1: "@@ -1 +1 @@\n-a\n+b\n"})
    for state in view.applied().values():
        assert state.how == "failed" and state.error


def test_real_history_states_equal_git_apply(tmp_path, history: TinyRepo):
    source = RepoSource(cache=tmp_path / "cache", url_template=history.template)
    module = function_file(history.path / "sqlparse")
    rel = module.relative_to(history.path).as_posix()
    base_text = (history.path / rel).read_text()  # the newest version (after the base): see below
    later = history.commits[5]
    first_def = base_text.index("def _upstream_renamed_")
    body_line = base_text[first_def:].split("\n")[2] + "\n"
    patches = {
        0: patch_at(history, history.base, edit("sqlparse/gagar_extra.py", "value * 2", "value * 3")),
        1: patch_at(
            history, history.base, steps(rename(rel, rel.replace(".py", "_moved.py")), delete("sqlparse/gagar_extra.py"))
        ),
        2: patch_at(history, later, edit(rel, body_line, body_line + "# touched by the agent\n")),
        3: patch_at(history, later, edit(rel, "def _upstream_renamed_", "def agent_renamed_")),
        4: patch_at(history, history.commits[1], edit(rel, "\n", "\n# early\n")),
    }
    view = GitRepoView(source, history.repo, history.base, patches)
    applied = view.applied()
    assert applied[0].how == applied[1].how == "clean"
    assert applied[2].how == "three_way", applied[2]
    assert applied[3].how == "failed"
    assert usable_trees_equal_plain_apply(view, history, patches) >= 3
    assert len(view.list("base", "sqlparse")) > 10


def test_a_3_way_merge_fetches_the_history_it_needs_once(tmp_path, tiny: TinyRepo):
    source = RepoSource(cache=tmp_path / "cache", url_template=tiny.template)
    later = tiny.commits[2]  # the patch's preimage of calc.py is this commit's, not the base's
    merges = {0: patch_at(tiny, later, edit("tiny/calc.py", "    return a + b\n\n", "    return a + b\n# agent\n"))}
    mirror = source.mirror(tiny.repo, tiny.base)
    assert source.is_shallow(mirror), "the base commit alone, fetched by id"
    # A patch that names no file version (no `index` line) and does not apply: no history helps it.
    stale = "--- a/tiny/calc.py\n+++ b/tiny/calc.py\n@@ -1,2 +1,2 @@\n no such line\n-here\n+there\n"
    assert GitRepoView(source, tiny.repo, tiny.base, {0: stale}).applied()[0].how == "failed"
    assert source.fetches(tiny.repo) == 1
    # A page request fetches nothing: the patch fails for now, saying why, and that is not remembered.
    remembered = set((mirror / "gagar-states").glob("*.json"))
    assert len(remembered) == 1, "the stale patch's failure is remembered"
    page = GitRepoView(source, tiny.repo, tiny.base, merges, fetch=False).applied()[0]
    assert page.how == "failed" and "history is not fetched yet" in page.error
    assert source.fetches(tiny.repo) == 1 and set((mirror / "gagar-states").glob("*.json")) == remembered
    # The grader's view fetches the history (once) and the patch merges 3-way.
    assert GitRepoView(source, tiny.repo, tiny.base, merges).applied()[0].how == "three_way"
    assert source.fetches(tiny.repo) == 2 and source.holds_history(mirror)
    again = GitRepoView(source, tiny.repo, tiny.base, {1: merges[0].replace("# agent", "# agent again")}).applied()[1]
    assert again.how == "three_way" and source.fetches(tiny.repo) == 2
