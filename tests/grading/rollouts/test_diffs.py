"""Parsing and rendering patches (grading/rollouts/diffs.py): split rows, escaping, stats."""

import doctest

from grading.rollouts import diffs


def test_doctests():
    assert doctest.testmod(diffs).failed == 0


def test_split_rows_pair_removals_with_additions():
    patch = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,4 @@\n a\n-b\n-c\n+B\n+C\n+D\n"
    (file,) = diffs.parse_patch(patch).files
    split = file.hunks[0].split
    assert [(r.old_no, r.old_kind, r.new_no, r.new_kind) for r in split] == [
        (1, "context", 1, "context"),
        (2, "removed", 2, "added"),
        (3, "removed", 3, "added"),
        (None, "empty", 4, "added"),
    ]


def test_highlighting_escapes_html_in_code():
    patch = "--- a/t.html\n+++ b/t.html\n@@ -0,0 +1 @@\n+<script>alert(1)</script>\n"
    (file,) = diffs.parse_patch(patch).files
    html = file.hunks[0].unified[0].html
    assert "<script>" not in html and "&lt;" in html


def test_multi_file_patch_stats_and_unparseable_text():
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/y.py\n@@ -0,0 +1,2 @@\n+c\n+d\n"
    assert diffs.patch_stats(patch) == (2, 3, 1, True)
    assert diffs.parse_patch(patch).files[1].status == "added"
    assert diffs.patch_stats("just words") == (0, 0, 0, False)
    bad_hunk = "--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-a\n"
    parsed = diffs.parse_patch(bad_hunk)
    assert not parsed.parses and parsed.raw == bad_hunk
