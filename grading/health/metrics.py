"""A trainer's post of step metrics, checked. Pure: no Django.

    {"step": 12, "metrics": {"actor/entropy": 0.41, "response_length/mean": 812.5}}
    [{"step": 12, "metrics": {...}}, {"step": 13, "metrics": {...}}]   # several steps at once

Names are what the trainer calls them (verl's `actor/entropy`, TRL's `entropy`), 1 to 100
printable characters; values are finite numbers (a bool is not one). The whole post is refused
when any part is, the error naming it (`steps[1].metrics["actor/kl"]`): nothing of it is stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_NAME = 100
MAX_VALUES = 5_000  # in one post
MAX_STEP = 2**31 - 1


class MetricsError(ValueError):
    """A refused post; `field` names the offending part."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class MetricValue:
    step: int
    name: str
    value: float


def check_name(name: Any) -> str | None:
    """Why `name` is not a metric's name, or None."""
    if not isinstance(name, str) or not name.strip():
        return "a metric's name is text"
    if len(name) > MAX_NAME:
        return f"a metric's name has at most {MAX_NAME} characters"
    if not name.isprintable():
        return "a metric's name is printable text"
    return None


def parse_metrics(body: Any) -> list[MetricValue]:
    """The values of a post, in order; MetricsError naming the first refused part."""
    many = isinstance(body, list)
    entries = body if many else [body]
    if not entries:
        raise MetricsError("body", "no steps posted")
    values: list[MetricValue] = []
    for position, entry in enumerate(entries):
        where = f"steps[{position}]" if many else ""
        prefix = f"{where}." if where else ""
        if not isinstance(entry, dict):
            raise MetricsError(where or "body", 'a post is {"step": n, "metrics": {name: value}} or a list of them')
        unknown = sorted(set(entry) - {"step", "metrics"})
        if unknown:
            raise MetricsError(prefix + unknown[0], f"unknown field {unknown[0]!r}")
        step = entry.get("step")
        if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= MAX_STEP:
            raise MetricsError(prefix + "step", "step is a whole number from 0")
        metrics = entry.get("metrics")
        if not isinstance(metrics, dict) or not metrics:
            raise MetricsError(prefix + "metrics", "metrics is an object of names and numbers, not empty")
        for name, value in metrics.items():
            field = f'{prefix}metrics["{str(name)[:MAX_NAME]}"]'
            why = check_name(name)
            if why is not None:
                raise MetricsError(field, why)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise MetricsError(field, f"{name} is not a number")
            try:
                number = float(value)
            except OverflowError:  # an integer past what a float holds
                number = math.inf
            if not math.isfinite(number):
                raise MetricsError(field, f"{name} is not finite ({value!r})")
            values.append(MetricValue(step, name, number))
            if len(values) > MAX_VALUES:
                raise MetricsError("body", f"at most {MAX_VALUES:,} values in one post")
    return values
