"""Reading a request body line by line (grading/formats/linereader.py): chunk boundaries,
oversize lines, gzip by magic and corrupt gzip."""

import doctest
import gzip
import io

import pytest

from grading.formats import linereader
from grading.formats.linereader import OversizeLine, iter_lines, open_body


def test_doctests():
    assert doctest.testmod(linereader).failed == 0


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
