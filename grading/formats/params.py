"""One way to read a parameter from a URL, a query or a form field: ASCII digits, ranges, no NUL.

Pure (no Django). `str.isdigit()` is True for '²' and '٣', which `int()` then refuses or reads
as a digit of another script, and a NUL passes every check until PostgreSQL refuses the text;
every page and API endpoint reads its whole numbers and names through here instead.

>>> whole("12", "step")
12
>>> "²".isdigit(), is_whole("²")
(True, False)
>>> whole_or(None, "page", default=1)
1
"""

from __future__ import annotations

from typing import TypeVar

from grading.formats.groupline import MAX_INT as MAX_INT  # 32-bit integer columns (step, index)
from grading.formats.groupline import MAX_NAME  # names

MAX_ID = 2**63 - 1  # 64-bit primary keys
MAX_TEXT = MAX_NAME  # names (project, run, mapping); a uid is bounded by its own column
_ASCII_DIGITS = frozenset("0123456789")

T = TypeVar("T")


class ParamError(ValueError):
    """A parameter that cannot be read; `name` is the parameter, the message says why."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def _show(raw: str) -> str:
    return repr(raw[:40])


def is_whole(raw: object) -> bool:
    """Only ASCII digits, at least one (no sign, space, '_', '²' or other scripts' digits)."""
    return isinstance(raw, str) and raw != "" and set(raw) <= _ASCII_DIGITS


def whole(raw: str | None, name: str, *, minimum: int = 0, maximum: int = MAX_INT) -> int:
    """A whole number from `minimum` to `maximum` (a leading '-' only when minimum < 0); ParamError otherwise."""
    if raw is None:
        raise ParamError(name, f"{name!r} is required")
    text = raw[1:] if minimum < 0 and raw.startswith("-") else raw
    kind = " (a non-negative integer)" if minimum >= 0 else ""
    problem = ParamError(name, f"{name!r} must be a whole number from {minimum} to {maximum}{kind}, got {_show(raw)}")
    # The length bound keeps int() away from huge strings (and its 4,300-digit limit).
    if not is_whole(text) or len(text) > len(str(max(abs(minimum), abs(maximum)))) + 1:
        raise problem
    value = int(raw)
    if not minimum <= value <= maximum:
        raise problem
    return value


def optional_whole(raw: str | None, name: str, *, minimum: int = 0, maximum: int = MAX_INT) -> int | None:
    """None when absent; otherwise as `whole` (an empty value is an error, not absent)."""
    return None if raw is None else whole(raw, name, minimum=minimum, maximum=maximum)


def whole_or(raw: str | None, name: str, *, default: T, minimum: int = 0, maximum: int = MAX_INT) -> int | T:
    """Lenient form for pages: `default` when absent, blank or unreadable."""
    try:
        return whole((raw or "").strip(), name, minimum=minimum, maximum=maximum) if raw and raw.strip() else default
    except ParamError:
        return default


def text(raw: str | None, name: str, *, max_len: int = MAX_TEXT, required: bool = True) -> str:
    """A name or free text: no NUL (PostgreSQL refuses it in text), at most `max_len` characters."""
    if raw is None or raw == "":
        if required:
            raise ParamError(name, f"{name!r} is required")
        return ""
    if "\x00" in raw:
        raise ParamError(name, f"{name!r} contains a NUL character")
    if len(raw) > max_len:
        raise ParamError(name, f"{name!r} is longer than {max_len} characters")
    return raw


def usable_name(raw: str | None, *, max_len: int = MAX_TEXT) -> bool:
    """Whether a stored name could be this: non-empty, no NUL, not over-long (else: no such thing, 404)."""
    return raw is not None and raw != "" and "\x00" not in raw and len(raw) <= max_len
