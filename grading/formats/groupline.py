"""Parse and validate one `gagar-group/1` line (docs/formats.md) into plain data. No Django here.

Every refusal is a `LineError` naming the field and the reason, so a trainer streaming
a step learns exactly which line to fix and resend:

>>> parse_group_line(b'{"format": "gagar-group/1", "run": "r", "step": 1, "uid": "u",'
...                  b' "task": {"instance_id": "t"}, "rollouts": [{"index": 0, "reward": 2}]}')
Traceback (most recent call last):
...
grading.formats.groupline.LineError: rollouts[0].reward: must be 0 or 1 (binary test reward), got 2
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from grading.method.partial import check_reason
from grading.rollouts.clusters import PatchChanges, patch_changes
from grading.rollouts.diffs import read_patch

FORMAT = "gagar-group/1"
MAX_NAME = 200
MAX_UID = 300
# Column sizes the database enforces (PostgreSQL refuses longer values; SQLite would not).
MAX_REPO = 300
MAX_BASE_COMMIT = 100
MAX_INT = 2**31 - 1  # step and rollout index columns are 32-bit
MAX_BIGINT = 2**63 - 1
# A group line is 5-6 levels deep. Far deeper JSON is refused: Python's json (Django's
# JSONField reads, DRF's renderer) gives up near 1,000 levels, orjson at 1,024.
MAX_DEPTH = 64

TASK_TEXT_FIELDS = ("repo", "base_commit", "problem_statement", "gold_patch", "test_patch")
TASK_LIST_FIELDS = ("FAIL_TO_PASS", "PASS_TO_PASS")

# Cheap pre-check on the raw bytes: only lines that contain an escaped NUL get the slow
# walk that finds the field. (orjson itself refuses lone surrogates, invalid UTF-8,
# raw control characters, NaN/Infinity and nesting deeper than 1024.)
_NUL_ESCAPE = re.compile(rb"\\u0000")
# A quote followed by a colon: every object key ends so. Quotes inside strings are escaped
# (preceded by an odd run of backslashes) and are subtracted; see _key_ends.
_QUOTE_COLON = re.compile(rb'"[ \t\r\n]*:')
_ESCAPED_QUOTE_COLON = re.compile(rb'\\"[ \t\r\n]*:')


class LineError(ValueError):
    """A line refused, with the field path and reason in the message."""


@dataclass(frozen=True)
class ParsedTask:
    instance_id: str
    fields: dict[str, Any]  # model field name -> value, only those the line carried

    def conflicts_with(self, stored: dict[str, Any]) -> list[str]:
        """Fields present on both sides that differ. Missing values are filled, not conflicts."""
        return [
            name for name, value in self.fields.items() if stored.get(name) not in (None, "", [], {}) and stored[name] != value
        ]


@dataclass(frozen=True)
class ParsedRollout:
    index: int
    reward: float | None
    passed: bool | None
    content_hash: str
    exit_status: str
    dropped: str  # the trainer's drop reason, "" when it kept the rollout (grading.method.partial)
    n_messages: int
    tokens: int | None
    cost_usd: float | None
    stats: dict[str, Any]
    patch_files: int
    patch_added: int
    patch_removed: int
    patch_parses: bool
    tests_passed: int
    tests_failed: int
    source_format: str
    source_ref: str
    messages: list[Any]
    patch: str
    tests: dict[str, Any]
    test_log: str
    metadata: dict[str, Any]
    changes: PatchChanges  # what the patch changes, normalised (grading.rollouts.clusters)


@dataclass(frozen=True)
class ParsedGroup:
    run: str
    step: int
    uid: str
    task: ParsedTask
    rollouts: list[ParsedRollout] = field(default_factory=list)


def _fail(path: str, why: str) -> LineError:
    return LineError(f"{path}: {why}")


def _hidden_character(value: str) -> str | None:
    """The first control or invisible formatting character (bidi overrides, zero-width
    joiners, BOM...), as U+XXXX, or None."""
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return f"U+{ord(char):04X}"
    return None


def check_name(value: str, path: str, *, kind: str) -> None:
    """Identities end up in page URLs and headings, so they must read as what they are.

    `kind` is "run" (one URL segment: no '/') or "uid" (may hold '/', but no '.' or '..'
    segment, which a browser would resolve away). Control and invisible formatting
    characters are refused in both, and in instance ids ("instance").
    """
    hidden = _hidden_character(value)
    if hidden:
        raise _fail(path, f"contains a control or invisible formatting character ({hidden}); identities must be visible text")
    if kind == "run" and "/" in value:
        raise _fail(path, "must not contain '/' (a run name is one segment of page URLs)")
    if kind in ("run", "uid") and any(part in (".", "..") for part in value.split("/")):
        raise _fail(path, "must not be or contain '.' or '..' as a path segment (browsers rewrite such URLs)")


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number" if isinstance(value, (int, float)) else type(value).__name__
    )


def _string(obj: dict[str, Any], key: str, path: str, *, required: bool = False, max_len: int | None = None) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise _fail(f"{path}{key}", "required")
        return ""
    if not isinstance(value, str):
        raise _fail(f"{path}{key}", f"must be a string, got {_type_name(value)}")
    if required and not value.strip():
        raise _fail(f"{path}{key}", "must not be empty")
    if max_len is not None and len(value) > max_len:
        raise _fail(f"{path}{key}", f"longer than {max_len} characters")
    return value


def _object(obj: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(f"{path}{key}", f"must be an object, got {_type_name(value)}")
    return value


def _int(value: Any, path: str, *, minimum: int = 0, maximum: int = MAX_INT) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(path, f"must be an integer, got {_type_name(value)}")
    if value < minimum:
        raise _fail(path, f"must be >= {minimum}, got {value}")
    if value > maximum:
        raise _fail(path, f"must be <= {maximum:,}, got {value}")
    return value


def _optional_number(value: Any, path: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise _fail(path, "must be a finite number")
    return value


def _walk(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) of every node, depth first in document order, without recursion
    (input may be nested as deep as the parser allows)."""
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, dict):
            stack.extend(reversed([(f"{path}.{k}" if path else k, v) for k, v in value.items()]))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(value)]))


def find_nul(value: Any, path: str) -> str | None:
    """Path of the first string (or key) holding U+0000, which PostgreSQL cannot store."""
    for where, node in _walk(value, path):
        if isinstance(node, str):
            if "\x00" in node:
                return where
        elif isinstance(node, dict):
            for key in node:
                if "\x00" in key:
                    return f"{where}.<key>" if where else "<key>"
    return None


def _shape(value: Any) -> tuple[int, int]:
    """(number of object keys, nesting depth) of decoded JSON; iterative and cheap."""
    keys = depth = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            keys += len(node)
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if level > depth:
            depth = level
            if depth > MAX_DEPTH:
                break
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return keys, depth


def _key_ends(raw: bytes) -> int:
    """An upper bound of the object keys written in `raw` (valid JSON), counting duplicates.

    Every key ends with an unescaped quote and a colon. A quote-colon inside a string has
    an escaped quote (odd run of backslashes) and is not counted; the opening quote of a
    string value that starts with ':' is, which only makes the bound looser.
    """
    count = len(_QUOTE_COLON.findall(raw))
    for match in _ESCAPED_QUOTE_COLON.finditer(raw):
        i, run = match.start(), 0
        while i >= 0 and raw[i] == 0x5C:  # backslash
            run += 1
            i -= 1
        if run % 2:
            count -= 1
    return count


class _Pairs(list[Any]):
    """An object's (key, value) pairs as written, duplicates kept."""


def _find_duplicate_key(raw: bytes) -> str | None:
    """'path: duplicate key ...' for the first object that repeats a key (slow path)."""
    tree = json.loads(raw, object_pairs_hook=_Pairs)  # orjson already accepted it; depth is bounded
    stack = [("", tree)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, _ in node:
                if key in seen:
                    return f"{path or '<line>'}: duplicate key {key!r:.80} (JSON parsers keep only one; send each key once)"
                seen.add(key)
            stack.extend(reversed([(f"{path}.{k}" if path else k, v) for k, v in node]))
        elif isinstance(node, list):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(node)]))
    return None


def canonical_hash(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


def stored_rollout(
    *,
    index: int,
    reward: float | None,
    exit_status: str,
    stats: dict[str, Any],
    source_format: str,
    source_ref: str,
    patch: str,
    messages: list[Any],
    tests: dict[str, Any],
    test_log: str,
    metadata: dict[str, Any],
    dropped: str = "",
) -> dict[str, Any]:
    """A rollout as it is stored, every field present (absent ones as their empty value): what
    `GET /api/v1/groups/{uid}/` returns and what the content hash covers. So a line read back
    and sent again is `unchanged`, and so is the same rollout written with or without empty
    fields; keys the format does not define are not stored, and not compared. `dropped` is
    there only when the trainer dropped the rollout, so hashes stored before it existed hold."""
    stored = {
        "index": index,
        "reward": reward,
        "exit_status": exit_status,
        "stats": stats,
        "source": {"format": source_format, "ref": source_ref},
        "patch": patch,
        "messages": messages,
        "tests": tests,
        "test_log": test_log,
        "metadata": metadata,
    }
    if dropped:
        stored["dropped"] = dropped
    return stored


def _parse_tests(tests: dict[str, Any], path: str) -> tuple[int, int]:
    passed = failed = 0
    for category, outcome in tests.items():
        if not isinstance(outcome, dict):
            raise _fail(f"{path}.{category}", f"must be an object with success/failure lists, got {_type_name(outcome)}")
        for key in ("success", "failure"):
            items = outcome.get(key, [])
            if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
                raise _fail(f"{path}.{category}.{key}", "must be a list of test ids (strings)")
        passed += len(outcome.get("success", []))
        failed += len(outcome.get("failure", []))
    return passed, failed


def parse_rollout(raw: Any, path: str, *, reward_required: bool = True) -> ParsedRollout:
    if not isinstance(raw, dict):
        raise _fail(path, f"must be an object, got {_type_name(raw)}")
    if "index" not in raw:
        raise _fail(f"{path}.index", "required")
    index = _int(raw["index"], f"{path}.index")
    reward_value = raw.get("reward")
    if reward_value is None:
        if reward_required:
            raise _fail(f"{path}.reward", "required")
        reward = None
    else:
        if isinstance(reward_value, bool) or not isinstance(reward_value, (int, float)):
            raise _fail(f"{path}.reward", f"must be a number, got {_type_name(reward_value)}")
        if not math.isfinite(reward_value):
            raise _fail(f"{path}.reward", f"must be a finite number, got {reward_value}")
        if reward_value not in (0, 1):
            raise _fail(f"{path}.reward", f"must be 0 or 1 (binary test reward), got {reward_value}")
        reward = 1.0 if reward_value == 1 else 0.0  # -0.0 is 0: the same line with 0 is the same rollout
    prefix = f"{path}."
    patch = _string(raw, "patch", prefix)
    messages = raw.get("messages") or []
    if not isinstance(messages, list):
        raise _fail(f"{path}.messages", f"must be an array, got {_type_name(messages)}")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise _fail(f"{path}.messages[{i}]", f"must be an object, got {_type_name(message)}")
        role = message.get("role")
        if role is not None and not isinstance(role, str):
            raise _fail(f"{path}.messages[{i}].role", "must be a string")
    tests = _object(raw, "tests", prefix)
    tests_passed, tests_failed = _parse_tests(tests, f"{path}.tests")
    stats = _object(raw, "stats", prefix)
    tokens = _optional_number(stats.get("tokens"), f"{path}.stats.tokens")
    if tokens is not None and not 0 <= tokens <= MAX_BIGINT:
        raise _fail(f"{path}.stats.tokens", f"must be between 0 and {MAX_BIGINT:,}, got {tokens}")
    cost = _optional_number(stats.get("cost_usd"), f"{path}.stats.cost_usd")
    source = _object(raw, "source", prefix)
    read = read_patch(patch)  # once: for the counts and for the patch's cluster key
    files, added, removed, parses = read.stats
    exit_status = _string(raw, "exit_status", prefix)[:100]
    source_format = _string(source, "format", f"{path}.source.")[:64]
    source_ref = _string(source, "ref", f"{path}.source.")[:1000]
    test_log = _string(raw, "test_log", prefix)
    metadata = _object(raw, "metadata", prefix)
    dropped = raw.get("dropped") or ""
    if dropped:
        try:
            check_reason(dropped)
        except ValueError as exc:
            raise _fail(f"{path}.dropped", str(exc).removeprefix("dropped ")) from None
    stored = stored_rollout(  # reward normalized: 1 and 1.0 are the same rollout
        index=index,
        reward=reward,
        exit_status=exit_status,
        stats=stats,
        source_format=source_format,
        source_ref=source_ref,
        patch=patch,
        messages=messages,
        tests=tests,
        test_log=test_log,
        metadata=metadata,
        dropped=dropped,
    )
    return ParsedRollout(
        index=index,
        reward=reward,
        passed=None if reward is None else reward == 1.0,
        content_hash=canonical_hash(stored),
        exit_status=exit_status,
        dropped=dropped,
        n_messages=len(messages),
        tokens=None if tokens is None else int(tokens),
        cost_usd=cost,
        stats=stats,
        patch_files=files,
        patch_added=added,
        patch_removed=removed,
        patch_parses=parses,
        tests_passed=tests_passed,
        tests_failed=tests_failed,
        source_format=source_format,
        source_ref=source_ref,
        messages=messages,
        patch=patch,
        tests=tests,
        test_log=test_log,
        metadata=metadata,
        changes=patch_changes(patch, read),
    )


def parse_task(raw: Any) -> ParsedTask:
    if not isinstance(raw, dict):
        raise _fail(
            "task", "required (an object with instance_id)" if raw is None else f"must be an object, got {_type_name(raw)}"
        )
    instance_id = _string(raw, "instance_id", "task.", required=True, max_len=MAX_UID)
    check_name(instance_id, "task.instance_id", kind="instance")
    fields: dict[str, Any] = {}
    for key in TASK_TEXT_FIELDS:
        value = _string(raw, key, "task.", max_len={"repo": MAX_REPO, "base_commit": MAX_BASE_COMMIT}.get(key))
        if value:
            fields[key] = value
    for key in TASK_LIST_FIELDS:
        ids = raw.get(key)
        if ids is None:
            continue
        if not isinstance(ids, list) or not all(isinstance(t, str) for t in ids):
            raise _fail(f"task.{key}", "must be a list of test ids (strings)")
        fields[key.lower()] = ids
    extra = {k: v for k, v in raw.items() if k not in {"instance_id", *TASK_TEXT_FIELDS, *TASK_LIST_FIELDS}}
    if extra:
        fields["extra"] = extra
    return ParsedTask(instance_id=instance_id, fields=fields)


def parse_group(obj: Any, *, allow_unknown_reward: bool = False) -> ParsedGroup:
    """Validate an already-decoded group object.

    `allow_unknown_reward` lets a rollout carry `"reward": null` (no test verdict). Only
    importers of foreign runs set it; the native format keeps requiring a reward.
    """
    if not isinstance(obj, dict):
        raise LineError(f"line must be a JSON object, got {_type_name(obj)}")
    fmt = obj.get("format")
    if fmt is None:
        raise _fail("format", f'required ("{FORMAT}")')
    if fmt != FORMAT:
        raise _fail("format", f'expected "{FORMAT}", got {fmt!r:.60}')
    run = _string(obj, "run", "", required=True, max_len=MAX_NAME)
    check_name(run, "run", kind="run")
    if "step" not in obj:
        raise _fail("step", "required")
    step = _int(obj["step"], "step")
    uid = _string(obj, "uid", "", required=True, max_len=MAX_UID)
    check_name(uid, "uid", kind="uid")
    task = parse_task(obj.get("task"))
    raw_rollouts = obj.get("rollouts")
    if not isinstance(raw_rollouts, list) or not raw_rollouts:
        raise _fail("rollouts", "required (a non-empty array)" if raw_rollouts in (None, []) else "must be an array")
    rollouts: list[ParsedRollout] = []
    seen: dict[int, int] = {}
    for position, raw in enumerate(raw_rollouts):
        rollout = parse_rollout(raw, f"rollouts[{position}]", reward_required=not allow_unknown_reward)
        if rollout.index in seen:
            raise _fail(
                f"rollouts[{position}].index",
                f"duplicate index {rollout.index} (also at rollouts[{seen[rollout.index]}])",
            )
        seen[rollout.index] = position
        rollouts.append(rollout)
    rollouts.sort(key=lambda r: r.index)
    return ParsedGroup(run=run, step=step, uid=uid, task=task, rollouts=rollouts)


def _json_error(raw: bytes, exc: orjson.JSONDecodeError) -> LineError:
    """orjson's reason plus the text around the position, so the sender can find it."""
    message = str(exc)
    pos = getattr(exc, "pos", None)  # a character offset
    if "UTF-8" in message:  # orjson reports these at position 0; find the byte
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            around = raw[max(0, bad.start - 30) : bad.start].decode("utf-8", errors="replace")
            return LineError(f"not valid JSON: not valid UTF-8 at byte {bad.start:,} ({bad.reason}); after {around!r}")
    if isinstance(pos, int) and raw:
        try:
            at = len(raw.decode("utf-8")[:pos].encode("utf-8"))
        except UnicodeDecodeError:
            at = pos
        around = raw[max(0, at - 30) : at + 10].decode("utf-8", errors="replace")
        message += f"; near {around!r}"
        if raw[at : at + 9].lstrip(b"-").startswith((b"NaN", b"Infinity")) or "infinity" in str(exc):
            message += " (NaN and Infinity are not JSON numbers; send a finite number or null)"
        elif at >= len(raw.rstrip()) - 1:
            message += " (the line ends early: truncated?)"
    return LineError(f"not valid JSON: {message}")


def parse_group_line(raw: bytes, *, allow_unknown_reward: bool = False) -> ParsedGroup:
    """Decode and validate one line of bytes. Raises LineError naming the field and reason.

    Beyond orjson's own checks: nesting deeper than MAX_DEPTH and duplicate object keys
    (which a JSON parser silently resolves to the last one, losing data) are refused.
    """
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _json_error(raw, exc) from None
    keys, depth = _shape(obj)
    if depth > MAX_DEPTH:
        raise LineError(f"JSON nested deeper than {MAX_DEPTH} levels; a group line needs fewer than 10")
    if _key_ends(raw) != keys:
        duplicate = _find_duplicate_key(raw)
        if duplicate:
            raise LineError(duplicate)
    if _NUL_ESCAPE.search(raw):
        where = find_nul(obj, "")
        if where:
            raise _fail(where, "contains a NUL character (\\u0000), which cannot be stored; strip it and resend")
    if may_hold_long_int(raw):
        where = find_big_int(raw)
        if where is not None:
            raise _fail(where, f"integer past 64 bits (from {MIN_INT64:,} to {MAX_UINT64:,}); send it as a string")
    if _EXPONENT_REWARD.search(raw):
        underflow = find_reward_underflow(raw)
        if underflow is not None:
            raise _fail(underflow[0], f"must be 0 or 1 (binary test reward), got {underflow[1]}")
    return parse_group(obj, allow_unknown_reward=allow_unknown_reward)


# A reward such as 1E-400 is not 0 but reads as 0.0 (below the smallest float), so it would be
# stored as a failed test without a word. Only a line with a reward written with an exponent is
# read again to find one: a literal-prefixed search, linear in the line.
_EXPONENT_REWARD = re.compile(rb'"reward"\s*:\s*-?[0-9.]*[eE]')
_NONZERO_MANTISSA = re.compile(r"^-?0*\.?0*[1-9]")
_REWARD_PATH = re.compile(r"^rollouts\[\d+\]\.reward$")


class _Underflow(str):
    """A number literal that is not zero but reads as 0.0."""


def find_reward_underflow(raw: bytes) -> tuple[str, str] | None:
    """(path, literal) of the first rollout reward that is not 0 yet reads as 0.0, or None.

    >>> find_reward_underflow(b'{"rollouts": [{"reward": 0}, {"reward": -1E-400}]}')
    ('rollouts[1].reward', '-1E-400')
    """

    def parse_float(literal: str) -> float | _Underflow:
        mantissa = literal.lower().partition("e")[0]
        return _Underflow(literal) if float(literal) == 0 and _NONZERO_MANTISSA.match(mantissa) else 0.0

    try:
        tree = json.loads(raw, parse_float=parse_float)
    except (ValueError, RecursionError):
        return None
    for where, node in _walk(tree, ""):
        if isinstance(node, _Underflow) and _REWARD_PATH.match(where):
            return where, str(node)
    return None


# orjson reads an integer literal past 64 bits as a float, silently losing digits; only a line
# with a run of 19+ digits where a number may start is read again to find one.
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19
MIN_INT64, MAX_UINT64 = -(2**63), 2**64 - 1


def has_long_digits(raw: bytes) -> bool:
    """Whether `raw` holds a run of 19 or more ASCII digits.

    Every digit becomes `0` and every other byte a space, then a run of 19 zeros is looked
    for: two linear passes in C. The regex `[0-9]{19,}` this replaces tried the character
    class at every byte and took 25 ms of a 2.9 MB line, more than half of parsing it.

    >>> has_long_digits(b'{"id": 12345678901234567890}'), has_long_digits(b'[123456789012345678, 1]')
    (True, False)
    """
    return _LONG_RUN in raw.translate(_DIGITS_ONLY)


_NUMBER_AFTER = frozenset(b":[,")  # a JSON value starts after one of these (or at the start)
_JSON_SPACE = frozenset(b" \t\r\n")


def may_hold_long_int(raw: bytes) -> bool:
    """Whether `raw` holds a run of 19 or more ASCII digits where a JSON number may start:
    after `:`, `[` or `,` (JSON whitespace and a minus sign between), or at the start.

    Real trajectories are full of long digit runs inside strings (`Decimal('42.1234…')`,
    `Output: 42.000…`); a number literal can only follow one of those three bytes, so runs
    after anything else are passed over and the line is not decoded a second time. A run
    inside a string that does follow one (`"[1234…"`) only costs that second decoding.
    Linear: has_long_digits' translation, a find per run, and a look back over the bytes
    between the run and the one before it.

    >>> may_hold_long_int(b'{"id": 12345678901234567890}'), may_hold_long_int(b'[1,\\n -12345678901234567890]')
    (True, True)
    >>> may_hold_long_int(b'{"out": "42.12345678901234567890 and x12345678901234567890"}')
    False
    """
    digits = raw.translate(_DIGITS_ONLY)
    at = digits.find(_LONG_RUN)
    while at != -1:
        i = at - 1
        if i >= 0 and raw[i] == 0x2D:  # minus
            i -= 1
        while i >= 0 and raw[i] in _JSON_SPACE:
            i -= 1
        if i < 0 or raw[i] in _NUMBER_AFTER:
            return True
        end = digits.find(b" ", at)
        if end == -1:
            return False
        at = digits.find(_LONG_RUN, end)
    return False


class _BigInt:
    """Stands for an integer literal outside what orjson keeps as an integer."""


def find_big_int(raw: bytes) -> str | None:
    """Path of the first integer literal orjson would have turned into a float, or None."""

    def parse_int(literal: str) -> int | _BigInt:
        digits = literal.lstrip("-")
        if len(digits) < 19:
            return 0
        if len(digits) > 20:
            return _BigInt()
        return _BigInt() if not MIN_INT64 <= int(literal) <= MAX_UINT64 else 0

    try:
        tree = json.loads(raw, parse_int=parse_int)
    except (ValueError, RecursionError):
        return None
    for where, node in _walk(tree, ""):
        if isinstance(node, _BigInt):
            return where or "<line>"
    return None
