"""What the comparison pages show: the form read as the API's body, the runs a side may take,
and each figure as text with its interval."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Max, Min

from grading.comparisons.figures import Interval
from grading.models import Project, Run
from reviews.selectors.comparisons import Report

SHARES = ("win_rate", "groups_led", "t1_share")


def _number(raw: str | None) -> int | str | None:
    """A form field as the API's JSON would hold it: an int when it reads as one, else the text
    as given (the service names the field it refuses), None when blank."""
    text = (raw or "").strip()
    if not text:
        return None
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else text


def form_body(post) -> dict:
    """The form as the API's body (reviews.api.comparisons)."""
    body: dict = {"name": post.get("name", "")}
    for side in ("a", "b"):
        first, last = _number(post.get(f"{side}_first")), _number(post.get(f"{side}_last"))
        spec: dict = {"run": post.get(f"{side}_run", "")}
        if first is not None and last is not None:
            spec["steps"] = [first, last]
        elif first is not None or last is not None:
            spec["step"] = first if first is not None else last
        body[side] = spec
    for key in ("per_side", "max_tasks", "seed"):
        value = _number(post.get(key))
        if value is not None:
            body[key] = value
    if post.get("grader"):
        body["grader"] = post["grader"]
    return body


@dataclass(frozen=True)
class SideRun:
    name: str
    first: int | None
    last: int | None


def side_runs(project: Project) -> list[SideRun]:
    """The project's runs that are not comparisons, with their first and last step. One query."""
    rows = (
        Run.objects.filter(project=project, comparison__isnull=True)
        .annotate(first=Min("steps__number"), last=Max("steps__number"))
        .order_by("name")
        .values_list("name", "first", "last")
    )
    return [SideRun(*row) for row in rows]


def _text(value: float | None, share: bool) -> str:
    if value is None:
        return "—"
    return f"{100 * value:.1f} %" if share else f"{value:.2f}"


@dataclass(frozen=True)
class FigureText:
    name: str
    label: str
    a: str
    a_interval: str
    b: str
    b_interval: str


def _interval(i: Interval, share: bool) -> str:
    if i.low is None or i.high is None:
        return ""
    return f"[{_text(i.low, share)}, {_text(i.high, share)}]"


def figure_rows(report: Report) -> list[FigureText]:
    return [
        FigureText(
            name=row.name,
            label=row.label,
            a=_text(row.a.estimate, row.name in SHARES),
            a_interval=_interval(row.a, row.name in SHARES),
            b=_text(row.b.estimate, row.name in SHARES),
            b_interval=_interval(row.b, row.name in SHARES),
        )
        for row in report.rows
    ]
