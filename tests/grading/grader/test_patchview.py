"""Where a changed line sits (PatchView.enclosing): the def the hunk's lines above it open, read
by indentation, else the hunk's section header; and the same answer for every line of a hostile
hunk in linear time. Pure: no database."""

from __future__ import annotations

import time

import pytest

from grading.grader.prescreen.patchfiles import patch_files
from grading.grader.prescreen.patchview import PatchView
from grading.grader.prescreen.pysource import ParseBudget


def view(rows: list[str], header: str = "") -> PatchView:
    olds, news = sum(r[0] in "- " for r in rows), sum(r[0] in "+ " for r in rows)
    text = f"--- a/t.py\n+++ b/t.py\n@@ -1,{olds} +1,{news} @@{header}\n" + "".join(f"{r}\n" for r in rows)
    files = patch_files(text)
    assert files
    return PatchView.of(files[0], ParseBudget())


HUNK = [
    " class Tests:",  # 0
    "     @pytest.mark.slow",  # 1
    "     def test_one(self):",  # 2
    "         x = 1",  # 3
    "+",  # 4
    "+        # a comment at a lower indent does not close the def",  # 5
    "-        if x:",  # 6
    "+        if x:",  # 7
    "+            return x",  # 8
    "     def test_two(self):",  # 9
    "+        pass",  # 10
    " ",  # 11
    "+TOP = 1",  # 12
    "+    y = 2",  # 13
]


@pytest.mark.parametrize(
    "i, name",
    [
        (0, ""),
        (1, ""),
        (2, "test_one"),
        (3, "test_one"),
        (5, "test_one"),
        (8, "test_one"),
        (9, "test_two"),
        (10, "test_two"),
        (12, ""),
        (13, ""),
    ],
)
def test_a_line_sits_in_the_def_its_indentation_says(i, name):
    assert view(HUNK).enclosing(0, i) == name


def test_lines_whose_def_is_above_the_hunk_take_the_section_header():
    rows = ["     x = 1", "+    return None", "     y = 2"]
    assert [view(rows, " def compare_images(a, b):").enclosing(0, i) for i in range(3)] == ["compare_images"] * 3
    assert view(rows, " class Foo:").enclosing(0, 1) == ""
    assert view(["+    if a:", "+        return b"], "").enclosing(0, 1) == ""  # nothing tells


def test_every_line_of_a_long_hunk_is_placed_in_linear_time():
    # 20,000 lines under one def, then a second def: asking for each line used to walk back to the
    # def every time (quadratic: about 34 s here); one pass over the hunk answers them all
    rows = ["+def first():", *["+    x = 1"] * 20_000, "+def second():", *["+    y = 2"] * 10]
    v = view(rows)
    started = time.process_time()
    names = [v.enclosing(0, i) for i in range(len(rows))]
    assert time.process_time() - started < 5
    assert names == ["first"] * 20_001 + ["second"] * 11


def test_a_new_side_line_number_finds_its_row_and_def():
    v = view(HUNK)
    rows = v.file.hunks[0]
    by_no = {r.new_no: i for i, r in reversed(list(enumerate(rows))) if r.new_no is not None}
    assert [v.def_at(0, no) for no in sorted(by_no)] == [v.enclosing(0, by_no[no]) for no in sorted(by_no)]
    assert v.def_at(0, None) == "" and v.def_at(0, 10_000) == ""


def test_every_node_of_a_long_hunk_finds_its_row_in_linear_time():
    rows = ["+def first():", *["+    x = 1"] * 20_000]
    v = view(rows)
    started = time.process_time()
    names = {v.def_at(0, no) for no in range(1, 20_002)}
    assert time.process_time() - started < 5
    assert names == {"first"}
