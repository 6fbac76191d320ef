import doctest
import gzip
import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grading.formats import groupline, linereader
from grading.formats.linereader import OversizeLine, iter_lines, open_body
from grading.rollouts import diffs


def test_doctests():
    for module in (linereader, diffs, groupline):
        assert doctest.testmod(module).failed == 0


def test_lines_across_chunk_boundaries_and_oversize():
    body = b"aaaa\n" + b"b" * 50 + b"\ncc\n\ndd"
    lines = list(iter_lines(io.BytesIO(body), max_line_bytes=20, chunk_size=7))
    assert lines[0] == (1, b"aaaa")
    assert isinstance(lines[1][1], OversizeLine) and lines[1][0] == 2 and lines[1][1].size == 50
    assert lines[2:] == [(3, b"cc"), (5, b"dd")]


def test_gzip_detected_by_magic():
    stream = open_body(io.BytesIO(gzip.compress(b"x\ny\n")))
    assert [line for _, line in iter_lines(stream, max_line_bytes=10)] == [b"x", b"y"]


def test_corrupt_gzip_raises_body_error():
    data = gzip.compress(b"x\n" * 1000)
    with pytest.raises(linereader.BodyError):
        list(iter_lines(open_body(io.BytesIO(data[:30] + b"\x00" * 50)), max_line_bytes=10))


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


@given(
    st.lists(
        st.one_of(st.binary(max_size=8), st.sampled_from([b"0" * 18, b"9" * 19, b"1" * 25, b"-", b"\xd9", b"a"])), max_size=12
    )
)
def test_long_digit_scan_agrees_with_the_pattern(pieces):
    raw = b"".join(pieces)
    assert groupline.has_long_digits(raw) == bool(re.search(rb"[0-9]{19,}", raw))
