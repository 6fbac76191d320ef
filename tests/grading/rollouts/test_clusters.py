"""Patch clusters (grading/rollouts/clusters.py): the normaliser on crafted cases, the
extra-file rules, and the cost of hostile patches. Pure: no database."""

import doctest
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from grading.rollouts import clusters
from grading.rollouts.clusters import cluster_patches, is_scratch_name, patch_changes
from tests.helpers.real_groups import load_real_groups


def file_diff(path: str, hunks: list[tuple[int, list[str], list[str]]], *, context: str = "ctx") -> str:
    """A git diff of one modified file: per hunk (start line, removed lines, added lines)."""
    out = [f"diff --git a/{path} b/{path}", "index 1111111..2222222 100644", f"--- a/{path}", f"+++ b/{path}"]
    for start, removed, added in hunks:
        out.append(f"@@ -{start},{len(removed) + 1} +{start},{len(added) + 1} @@")
        out.append(f" {context} {start}")
        out += [f"-{line}" for line in removed] + [f"+{line}" for line in added]
    return "\n".join(out) + "\n"


def new_file(path: str, lines: list[str]) -> str:
    return (
        "\n".join(
            [
                f"diff --git a/{path} b/{path}",
                "new file mode 100644",
                "index 0000000..3333333",
                "--- /dev/null",
                f"+++ b/{path}",
                f"@@ -0,0 +1,{len(lines)} @@",
            ]
            + [f"+{line}" for line in lines]
        )
        + "\n"
    )


FIX = file_diff("pkg/core.py", [(10, ["    return a+b"], ["    return a + b"]), (40, [], ["    x = 1"])])
OTHER = file_diff("pkg/util.py", [(5, ["def f(): pass"], ["def f():", "    return 0"])])


def key(group, index):
    return group.of(index).key


def test_doctests():
    assert doctest.testmod(clusters).failed == 0


def test_same_change_in_another_hunk_and_file_order_is_one_cluster():
    hunks_swapped = file_diff("pkg/core.py", [(40, [], ["    x = 1"]), (10, ["    return a+b"], ["    return a + b"])])
    g = cluster_patches([(0, FIX + OTHER), (1, OTHER + hunks_swapped), (2, OTHER + FIX)])
    assert g.clusters == {0: (0, 1, 2)}
    assert g.distinct == 1
    assert [r.label for r in g.rollouts] == ["same change as #1, #2", "same change as #0, #2", "same change as #0, #1"]
    assert g.of(1).files == ("pkg/core.py", "pkg/util.py")


def test_every_member_of_a_cluster_names_all_the_others():
    # One wording per cluster: never "#1: same change as #2, #7" but "#7: same change as #1".
    g = cluster_patches([(i, FIX) for i in (1, 2, 7)] + [(9, OTHER)])
    assert {r.index: r.label for r in g.rollouts} == {
        1: "same change as #2, #7",
        2: "same change as #1, #7",
        7: "same change as #1, #2",
        9: "unique change",
    }
    big = cluster_patches([(i, FIX) for i in range(8)])
    assert big.of(0).label == "same change as #1, #2, #3, #4, #5 and 2 more"
    assert big.of(7).label == "same change as #0, #1, #2, #3, #4 and 2 more"


def test_whitespace_only_differences_vanish():
    reindented = file_diff(
        "pkg/core.py", [(10, ["\treturn a+b  "], ["        return   a + b\t"]), (40, [], ["", "    x = 1   ", "   "])]
    )
    # A file whose only change is whitespace (re-indent, trailing spaces, blank lines) does not count.
    whitespace_only = file_diff("pkg/style.py", [(3, ["if x:", "    y()  "], ["if x:  ", "\ty()", ""])])
    g = cluster_patches([(3, FIX), (5, reindented + whitespace_only)])
    assert g.clusters == {3: (3, 5)}
    assert g.of(5).files == ("pkg/core.py",)
    assert g.of(5).label == "same change as #3"
    # Whitespace inside a line is a change only when it is there or not, not in how much of it.
    assert key(cluster_patches([(0, file_diff("m.py", [(1, [], ["a = 1"])]))]), 0) != key(
        cluster_patches([(0, file_diff("m.py", [(1, [], ["a=1"])]))]), 0
    )


def test_a_one_character_difference_is_another_cluster():
    one_off = FIX.replace("x = 1", "x = 2")
    g = cluster_patches([(0, FIX), (1, one_off), (2, FIX)])
    assert g.clusters == {0: (0, 2), 1: (1,)}
    assert g.of(1).label == "unique change"
    assert g.of(0).cluster == g.of(2).cluster == 0 and g.of(1).cluster == 1


def test_renamed_scratch_file_same_cluster_different_extra_counts():
    a = FIX + new_file("debug_issue.py", ["import pkg", "print(pkg.core.add(1, 2))"])
    b = (
        FIX
        + new_file("debug_issue2.py", ["print('other')"])
        + new_file("FIX_SUMMARY.md", ["# Fix", "done"])
        + new_file("final_test.py", ["assert True"])
    )
    c = FIX
    g = cluster_patches([(1, a), (2, b), (3, c)])
    assert g.clusters == {1: (1, 2, 3)}
    assert g.of(1).extra_files == ("debug_issue.py",)
    assert g.of(2).extra_files == ("FIX_SUMMARY.md", "debug_issue2.py", "final_test.py")
    assert g.of(3).extra == 0
    assert g.of(1).label == "same change as #2, #3, +1 extra file"
    assert g.of(2).label == "same change as #1, #3, +3 extra files"
    assert g.of(3).label == "same change as #1, #2"


def test_new_file_touched_by_a_test_or_another_rollout_matters():
    helper = new_file("pkg/helpers.py", ["def add(a, b):", "    return a + b"])
    # Only one rollout writes it: extra, and the two share a cluster.
    g = cluster_patches([(0, FIX), (1, FIX + helper)])
    assert g.clusters == {0: (0, 1)} and g.of(1).extra_files == ("pkg/helpers.py",)
    # Two rollouts write it: it matters, and the one without it differs.
    g = cluster_patches([(0, FIX), (1, FIX + helper), (2, FIX + helper)])
    assert g.clusters == {0: (0,), 1: (1, 2)} and g.of(1).extra == 0
    assert g.of(1).files == ("pkg/core.py", "pkg/helpers.py")
    # A test names it (pytest id, Django label): it matters even alone, and even with a scratch name.
    test = new_file("pkg/tests/test_fix.py", ["def test_add():", "    assert True"])
    for names in (["pkg/tests/test_fix.py::test_add"], ["test_add (pkg.tests.test_fix.AddTests)"]):
        g = cluster_patches([(0, FIX), (1, FIX + test)], tests=names)
        assert g.distinct == 2 and g.of(1).extra == 0, names
    g = cluster_patches([(0, FIX), (1, FIX + test)], tests=["test_add"])  # a bare name names no file
    assert g.distinct == 1 and g.of(1).extra_files == ("pkg/tests/test_fix.py",)


def test_a_modified_file_always_matters_whatever_its_name():
    edit = file_diff("debug_tools.py", [(1, ["a"], ["b"])])
    g = cluster_patches([(0, FIX), (1, FIX + edit)])
    assert g.distinct == 2 and g.of(1).extra == 0 and "debug_tools.py" in g.of(1).files


def test_empty_patch_and_scratch_only_patch_are_no_change():
    g = cluster_patches({0: "", 1: None, 2: new_file("reproduce_issue.py", ["print(1)"]), 3: FIX})
    assert g.clusters == {0: (0, 1, 2), 3: (3,)}
    assert g.of(0).label == "no change" and g.of(1).label == "no change"
    assert g.of(2).label == "no change, +1 extra file"
    assert g.of(0).files == ()


def test_deleted_file():
    deleted = (
        "\n".join(
            [
                "diff --git a/pkg/old.py b/pkg/old.py",
                "deleted file mode 100644",
                "index 4444444..0000000",
                "--- a/pkg/old.py",
                "+++ /dev/null",
                "@@ -1,2 +0,0 @@",
                "-def old():",
                "-    pass",
            ]
        )
        + "\n"
    )
    # The same lines removed, the file kept (its first line stays): not the same change as deleting it.
    emptied = (
        "\n".join(["--- a/pkg/old.py", "+++ b/pkg/old.py", "@@ -1,3 +1,1 @@", " import os", "-def old():", "-    pass"]) + "\n"
    )
    g = cluster_patches([(0, FIX + deleted), (1, deleted + FIX), (2, FIX + emptied), (3, FIX)])
    assert g.clusters == {0: (0, 1), 2: (2,), 3: (3,)}
    assert g.of(0).files == ("pkg/core.py", "pkg/old.py") and g.of(0).extra == 0
    assert [f.status for f in patch_changes(deleted).files] == ["removed"]


def test_binary_diff_marker():
    binary = (
        "diff --git a/img/logo.png b/img/logo.png\nindex 5555555..6666666 100644\n"
        "Binary files a/img/logo.png and b/img/logo.png differ\n"
    )
    g = cluster_patches([(0, FIX + binary), (1, binary + FIX), (2, FIX)])
    assert g.clusters == {0: (0, 1), 2: (2,)}
    assert "img/logo.png" in g.of(0).files


def test_rename_is_a_change_of_its_own():
    rename = "diff --git a/pkg/a.py b/pkg/b.py\nsimilarity index 100%\nrename from pkg/a.py\nrename to pkg/b.py\n"
    g = cluster_patches([(0, FIX + rename), (1, FIX)])
    assert g.distinct == 2 and g.of(0).files == ("pkg/b.py", "pkg/core.py")


def test_unparseable_patches_compare_as_a_whole():
    junk = "this is not a diff\n+but has a plus line\n"
    g = cluster_patches([(0, junk), (1, "this  is not a diff  \n\n+but has a plus line\n"), (2, junk + "x\n")])
    assert g.clusters == {0: (0, 1), 2: (2,)}
    assert "does not parse" in g.of(0).note


def test_scratch_names_from_the_real_trajectories():
    for path in (
        "reproduce_issue.py",
        "reproduction_script.py",
        "verify_fix.py",
        "apply_fix.py",
        "test_fix.py",
        "run_repro.py",
        "check_fail_behavior.py",
        "test_floatformat.py",
        "reproduction/settings.py",
        "reproduce_app/__init__.py",
        "debug_issue.py",
        "pkg/debug_x.py",
        "final_test.py",
        "IMPLEMENTATION_SUMMARY.md",
        "docs/FIX_NOTES.md",
        "scratch/a.py",
        "pkg/scratch/b.txt",
        "test_fix_2.py",
        "inspect_issue.py",
        "modify_latex.py",
        "patch_models.py",
        "test_fk_app/models.py",
        "run_fk_test.py",
    ):
        assert is_scratch_name(path), path
    for path in (
        "pkg/core.py",
        "pkg/tests/test_core.py",
        "tests/test_fixtures.py",
        "README.md",
        "pkg/views/debug.py",
        "docs/summary.md",
        "setup.py",
        "pkg/checks.py",
        "pkg/run_tests.py",
        "pkg/patch_utils.py",
    ):
        assert not is_scratch_name(path), path


def test_real_patches_each_their_own_cluster_whatever_the_whitespace():
    """The 16 real patches in one group, each twice (the copy re-indented with tabs and
    trailing spaces, its files in reverse order): 16 clusters of two, no extra files."""
    patches = []
    for n, group in enumerate(load_real_groups()):
        patch = group["rollouts"][0]["patch"]
        files = ["diff --git " + part for part in patch.split("diff --git ") if part]
        copy = "".join(
            reversed(
                [
                    "\n".join(
                        line[:1] + line[1:].replace("    ", "\t") + "  "
                        if line[:1] in ("+", "-") and not line.startswith(("+++", "---"))
                        else line
                        for line in part.split("\n")
                    )
                    for part in files
                ]
            )
        )
        patches += [(2 * n, patch), (2 * n + 1, copy)]
    g = cluster_patches(patches)
    assert g.distinct == 16
    assert all(members == (first, first + 1) for first, members in g.clusters.items())
    assert sum(r.extra for r in g.rollouts) == 0
    assert g.of(0).label == "same change as #1"


def test_hostile_and_huge_patches_finish_quickly():
    started = time.process_time()  # this process's CPU time: the bound is on the work, not on a loaded machine
    # Over the parse cap: compared as a whole, never parsed.
    huge = FIX + "+" + "a " * (clusters.MAX_PATCH_CHARS // 2) + "\n"
    # Under it, but past the row cap: many tiny hunk lines.
    many = file_diff("pkg/big.py", [(1, [], ["x"] * (clusters.MAX_ROWS + 10))])
    # Long lines of whitespace and backslashes, a file name of 50,000 characters.
    nasty = file_diff("pkg/" + "d/" * 25_000 + "x.py", [(1, ["\\" * 100_000 + " " * 100_000], ["\t" * 200_000 + "y"])])
    g = cluster_patches(
        [(0, huge), (1, huge), (2, many), (3, nasty), (4, FIX)], tests=["(" * 10_000 + " (" + "a." * 5_000 + ")"] * 100
    )
    elapsed = time.process_time() - started
    assert g.clusters == {0: (0, 1), 2: (2,), 3: (3,), 4: (4,)}
    assert "compared as a whole" in g.of(0).note and "compared as a whole" in g.of(2).note
    assert elapsed < 10, elapsed


# --- properties ---------------------------------------------------------------------------

LINES = st.text(alphabet=st.sampled_from("ab =()+-:#\t "), min_size=0, max_size=12)
HUNKS = st.lists(st.tuples(st.lists(LINES, max_size=3), st.lists(LINES, min_size=1, max_size=3)), min_size=1, max_size=4)
FILES = st.dictionaries(st.sampled_from(["pkg/a.py", "pkg/b.py", "lib/c.py", "d.py"]), HUNKS, min_size=1, max_size=4)


def patch_of(files: dict, file_order: list[str], hunk_orders: dict) -> str:
    out = []
    for path in file_order:
        hunks = files[path]
        out.append(file_diff(path, [(10 * (k + 1), *hunks[k]) for k in hunk_orders[path]]))
    return "".join(out)


@settings(max_examples=150, deadline=None)
@given(files=FILES, data=st.data())
def test_permuting_files_and_hunks_never_changes_the_key(files, data):
    order = list(files)
    hunk_orders = {p: list(range(len(h))) for p, h in files.items()}
    base = patch_of(files, order, hunk_orders)
    shuffled = patch_of(
        files, data.draw(st.permutations(order)), {p: data.draw(st.permutations(o)) for p, o in hunk_orders.items()}
    )
    g = cluster_patches([(0, base), (1, shuffled)])
    assert g.of(0).key == g.of(1).key


@settings(max_examples=150, deadline=None)
@given(
    files=FILES,
    scratch=st.sampled_from(
        [
            "debug_issue.py",
            "reproduce_bug.py",
            "FIX_SUMMARY.md",
            "final_test.py",
            "scratch/notes.txt",
            "verify_fix.py",
            "reproduction/settings.py",
        ]
    ),
    content=st.lists(LINES, min_size=1, max_size=3),
    first=st.booleans(),
)
def test_adding_a_scratch_file_never_changes_the_key(files, scratch, content, first):
    base = patch_of(files, list(files), {p: list(range(len(h))) for p, h in files.items()})
    extra = new_file(scratch, content)
    g = cluster_patches([(0, base), (1, extra + base if first else base + extra)])
    assert g.of(0).key == g.of(1).key
    assert g.of(1).extra_files == (scratch,)
