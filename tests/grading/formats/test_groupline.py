"""The gagar-group/1 line checks (grading/formats/groupline.py)."""

import doctest
import re

from hypothesis import given
from hypothesis import strategies as st

from grading.formats import groupline


def test_doctests():
    assert doctest.testmod(groupline).failed == 0


@given(
    st.lists(
        st.one_of(st.binary(max_size=8), st.sampled_from([b"0" * 18, b"9" * 19, b"1" * 25, b"-", b"\xd9", b"a"])), max_size=12
    )
)
def test_long_digit_scan_agrees_with_the_pattern(pieces):
    raw = b"".join(pieces)
    assert groupline.has_long_digits(raw) == bool(re.search(rb"[0-9]{19,}", raw))
