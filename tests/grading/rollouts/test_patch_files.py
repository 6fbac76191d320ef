"""The judge panel's file order (grading/rollouts/patch_files.py): core change first, scratch
files last and counted apart. Pure: no database."""

from __future__ import annotations

import doctest

import pytest

from grading.rollouts import patch_files
from grading.rollouts.diffs import parse_patch
from grading.rollouts.patch_files import KINDS, file_kind, order_files
from tests.helpers.real_groups import load_real_long_groups


def test_doctest():
    assert doctest.testmod(patch_files).failed == 0


@pytest.mark.parametrize(
    ("path", "status", "kind"),
    [
        ("django/db/models/query.py", "modified", "core"),
        ("astropy/units/quantity.py", "modified", "core"),
        ("src/_pytest/skipping.py", "modified", "core"),
        ("pkg/new_module.py", "added", "core"),  # a new source file inside the package is part of the change
        ("tests/ordering/tests.py", "modified", "test"),
        ("astropy/units/tests/test_quantity_duck_typing.py", "added", "test"),
        ("testing/test_skipping.py", "modified", "test"),
        ("pkg/widget_test.py", "modified", "test"),
        ("conftest.py", "modified", "test"),
        ("docs/releases/5.0.txt", "modified", "docs"),
        ("README.rst", "modified", "docs"),
        ("CHANGES", "modified", "docs"),
        ("pyproject.toml", "modified", "config"),
        ("tox.ini", "modified", "config"),
        ("setup.py", "modified", "config"),
        ("requirements-dev.txt", "modified", "config"),
        # Scratch files the agent wrote: extra, whatever they look like otherwise.
        ("FIX_SUMMARY.md", "added", "extra"),
        ("IMPLEMENTATION_SUMMARY.md", "added", "extra"),
        ("debug_issue.py", "added", "extra"),
        ("pkg/debug_helpers.py", "added", "extra"),
        ("reproduce_bug.py", "added", "extra"),
        ("reproduction/settings.py", "added", "extra"),
        ("test_fix.py", "added", "extra"),
        ("test_plot.png", "binary", "extra"),
        ("final_test.py", "added", "extra"),
        ("run_check.sh", "added", "extra"),  # a new top-level script
        ("my_script.py", "added", "extra"),
    ],
)
def test_file_kinds(path, status, kind):
    assert file_kind(path, status) == kind


def test_a_file_that_was_there_before_is_never_extra():
    # Modified or deleted: it was in the repository before the agent came.
    assert file_kind("debug_tools.py", "modified") == "core"
    assert file_kind("reproduce.py", "removed") == "core"
    assert file_kind("FIX_NOTES.md", "modified") == "docs"


def test_the_clusters_extra_files_are_extra():
    # A new file only this rollout wrote (the cluster's extra_files) is collapsed too.
    assert file_kind("pkg/helper_only_i_wrote.py", "added") == "core"
    assert file_kind("pkg/helper_only_i_wrote.py", "added", extra_files=["pkg/helper_only_i_wrote.py"]) == "extra"
    assert file_kind("pkg/helper_only_i_wrote.py", "modified", extra_files=["pkg/helper_only_i_wrote.py"]) == "core"


def test_order_is_by_kind_and_stable_within_a_kind():
    files = [
        ("b.md", "added"),
        ("z/core.py", "modified"),
        ("FIX_SUMMARY.md", "added"),
        ("a/core.py", "modified"),
        ("tests/test_a.py", "modified"),
        ("debug_a.py", "added"),
    ]
    ordered = order_files(files, path=lambda f: f[0], status=lambda f: f[1])
    assert [f[0] for _, f in ordered] == ["z/core.py", "a/core.py", "tests/test_a.py", "b.md", "FIX_SUMMARY.md", "debug_a.py"]
    kinds = [k for k, _ in ordered]
    assert kinds == sorted(kinds, key=KINDS.index)


def test_an_overlong_path_is_not_matched_against_names():
    assert file_kind("debug_" + "x" * 5000 + ".py", "added") == "core"


def test_real_patches_with_scratch_files_put_the_fix_first():
    # A real patch (tests/fixtures) with the scratch files an agent leaves put in front of it.
    rollout = load_real_long_groups(6)[1]["rollouts"][5]
    scratch = (
        "diff --git a/FIX_SUMMARY.md b/FIX_SUMMARY.md\nnew file mode 100644\n--- /dev/null\n+++ b/FIX_SUMMARY.md\n"
        "@@ -0,0 +1,2 @@\n+# Fix\n+done\n"
        "diff --git a/debug_order.py b/debug_order.py\nnew file mode 100644\n--- /dev/null\n+++ b/debug_order.py\n"
        "@@ -0,0 +1 @@\n+print(1)\n"
    )
    parsed = parse_patch(scratch + rollout["patch"])
    assert [f.path for f in parsed.files][:2] == ["FIX_SUMMARY.md", "debug_order.py"]
    ordered = order_files(parsed.files)
    assert [(k, f.path) for k, f in ordered] == [
        ("core", "django/db/models/sql/compiler.py"),
        ("test", "tests/ordering/tests.py"),
        ("extra", "FIX_SUMMARY.md"),
        ("extra", "debug_order.py"),
    ]
