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


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**25), max_value=10**25)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet="0123456789.-:[, \"ab'", max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet="k0-:", max_size=4), inner, max_size=4),
    max_leaves=12,
)


@given(_json, st.sampled_from([None, 0, 2]), st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :\n ")]))
def test_every_integer_past_64_bits_is_looked_for(value, indent, separators):
    """The prescreen that spares most lines a second decoding never passes over a line whose
    integer literal orjson would turn into a float, however the JSON is spaced."""
    import json

    raw = json.dumps({"v": value}, indent=indent, separators=separators).encode()
    if groupline.find_big_int(raw) is not None:
        assert groupline.may_hold_long_int(raw)
    assert groupline.may_hold_long_int(raw) <= groupline.has_long_digits(raw)


def test_digits_inside_strings_do_not_make_a_line_decoded_twice():
    text = "Decimal('42.12345678901234567890') == 42.000000000000000000001"
    raw = b'{"messages": [{"content": "' + text.encode() + b'"}], "n": 7}'
    assert groupline.has_long_digits(raw) and not groupline.may_hold_long_int(raw)
    assert groupline.find_big_int(raw) is None
    raw = b'{"n": [1, -123456789012345678901]}'
    assert groupline.may_hold_long_int(raw) and groupline.find_big_int(raw) == "n[1]"
