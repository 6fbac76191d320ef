"""Parse and check an upload of scanner labels (POST /api/v1/scan-labels/). No Django here.

A body is JSON Lines, one label an object a line, or one JSON list of such objects:

    {"group": "<uid>", "run": "<run>", "rollout": 3, "category": "history_search",
     "label": "cheat" | "honest", "note": "optional"}

A refusal names the line (for a JSON list, the item's 1-based position) and the field; every
refusal of the body is listed, and one refusal refuses the whole body.

>>> body = b'{"group": "g@1", "run": "r", "rollout": 0, "category": "history_search", "label": "cheat"}\\n'
>>> parse_labels(body, categories={"history_search"})[0].rollout
0
>>> try:
...     parse_labels(body.replace(b'"cheat"', b'"maybe"'), categories={"history_search"})
... except LabelsRefused as exc:
...     print(exc.errors[0])
line 1, label: must be "cheat" or "honest", got 'maybe'
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, cast

from grading.formats.groupline import MAX_INT, MAX_NAME, MAX_UID

MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_LABELS = 5000
MAX_NOTE = 2000
MAX_ERRORS = 50  # refusals listed; the count says how many there were
LABELS = ("cheat", "honest")
FIELDS = ("group", "run", "rollout", "category", "label", "note")


@dataclass(frozen=True)
class LabelLine:
    line: int
    run: str
    group: str
    rollout: int
    category: str
    label: str
    note: str = ""

    @property
    def key(self) -> tuple[str, str, int, str]:
        return self.run, self.group, self.rollout, self.category


@dataclass(frozen=True)
class LabelError:
    line: int  # 0: the body as a whole
    field: str  # "" when the line as a whole is refused
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "body"
        return f"{where}, {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "field": self.field, "message": self.message}


class LabelsRefused(ValueError):
    """The body is refused; `errors` lists why (at most MAX_ERRORS of them, `count` in all)."""

    def __init__(self, errors: list[LabelError]):
        self.errors = errors[:MAX_ERRORS]
        self.count = len(errors)
        super().__init__(str(errors[0]) if errors else "refused")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"key {key[:80]!r} sent twice")
        seen[key] = value
    return seen


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _loads(text: bytes | str) -> Any:
    """JSON with no key twice and no NaN; ValueError for anything else."""
    try:
        return json.loads(text, object_pairs_hook=_refuse_duplicates, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _items(body: bytes) -> list[tuple[int, Any]] | LabelError:
    """(line, decoded value) for every label of the body, or why the body cannot be read."""
    if len(body) > MAX_BODY_BYTES:
        return LabelError(0, "", f"{len(body):,} bytes, over the limit of {MAX_BODY_BYTES:,}: send the labels in parts")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LabelError(0, "", f"not UTF-8 ({exc.reason} at byte {exc.start})")
    if text.lstrip().startswith("["):
        try:
            items = _loads(text)
        except ValueError as exc:
            return LabelError(0, "", f"not a JSON list: {exc}")
        if not isinstance(items, list):
            return LabelError(0, "", "send a JSON list of labels, or one label a line")
        return list(enumerate(items, 1))
    out: list[tuple[int, Any]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            out.append((number, _loads(raw)))
        except ValueError as exc:
            out.append((number, LabelError(number, "", f"not JSON: {exc}")))
    return out


def _text(obj: dict[str, Any], key: str, line: int, *, max_len: int, required: bool = True) -> str | LabelError:
    value = obj.get(key)
    if value is None:
        return LabelError(line, key, "required") if required else ""
    if not isinstance(value, str):
        return LabelError(line, key, f"must be a string, got {type(value).__name__}")
    if required and not value.strip():
        return LabelError(line, key, "must not be empty")
    if len(value) > max_len:
        return LabelError(line, key, f"longer than {max_len} characters")
    if "\x00" in value:
        return LabelError(line, key, "contains U+0000")
    return value


def _one(line: int, obj: Any, categories: Collection[str]) -> LabelLine | list[LabelError]:
    if isinstance(obj, LabelError):
        return [obj]
    if not isinstance(obj, dict):
        return [LabelError(line, "", f"must be an object, got {type(obj).__name__}")]
    errors = [LabelError(line, str(key)[:80], "unknown field") for key in obj if key not in FIELDS]
    run = _text(obj, "run", line, max_len=MAX_NAME)
    group = _text(obj, "group", line, max_len=MAX_UID)
    category = _text(obj, "category", line, max_len=40)
    note = _text(obj, "note", line, max_len=MAX_NOTE, required=False)
    index = obj.get("rollout")
    if index is None:
        errors.append(LabelError(line, "rollout", "required"))
    elif not isinstance(index, int) or isinstance(index, bool) or not 0 <= index <= MAX_INT:
        errors.append(LabelError(line, "rollout", f"must be a rollout index (an integer from 0), got {index!r:.40}"))
    label = obj.get("label")
    if label not in LABELS:
        errors.append(LabelError(line, "label", f'must be "cheat" or "honest", got {label!r:.40}'))
    errors += [v for v in (run, group, category, note) if isinstance(v, LabelError)]
    if isinstance(category, str) and category not in categories:
        errors.append(LabelError(line, "category", f"no scanner category {category!r:.60} (see docs/scanners.md)"))
    if errors:
        return errors
    # every field was checked above; the casts only tell the type checker so
    return LabelLine(
        line, cast(str, run), cast(str, group), cast(int, index), cast(str, category), cast(str, label), cast(str, note)
    )


def parse_labels(body: bytes, *, categories: Collection[str]) -> list[LabelLine]:
    """Every label of `body`, checked; LabelsRefused listing every refusal when any is refused
    (a label of a category not in `categories`, the same rollout and category twice, ...)."""
    items = _items(body)
    if isinstance(items, LabelError):
        raise LabelsRefused([items])
    if not items:
        raise LabelsRefused([LabelError(0, "", "no labels: send one JSON object a line, or a JSON list")])
    if len(items) > MAX_LABELS:
        raise LabelsRefused([LabelError(0, "", f"{len(items):,} labels, over the limit of {MAX_LABELS:,}: send them in parts")])
    labels: list[LabelLine] = []
    errors: list[LabelError] = []
    first: dict[tuple[str, str, int, str], int] = {}
    for line, obj in items:
        parsed = _one(line, obj, categories)
        if isinstance(parsed, list):
            errors += parsed
            continue
        if parsed.key in first:
            errors.append(LabelError(line, "category", f"line {first[parsed.key]} labels this rollout and category already"))
            continue
        first[parsed.key] = line
        labels.append(parsed)
    if errors:
        raise LabelsRefused(errors)
    return labels
