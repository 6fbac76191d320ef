"""The run timeline page's charts and tables from a run's health (grading.selectors.metrics):
one line chart per metric over steps, the compared runs on the same chart aligned by step,
an overlay of two metrics on two axes, and every point linked to its step's groups in the
order the metric is about (the longest trajectories for length, the most credit moved for
credit, the cheats for the cheat share)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from grading.health.warnings import HealthWarning, role_of
from grading.selectors.metrics import DESK_METRICS, Timeline

MAX_CHARTS = 24
MAX_COMPARED = 4  # runs beside the first
DEFAULT_DESK = ("pass_rate", "tokens", "t1_share", "credit_moved_share", "cheat_share", "fallback_share")
# The step page a point opens: (?show, ?sort) by what the metric is about.
LENGTHS = ("tokens", "messages", "length", "response_length", "turns")


def point_query(name: str) -> str:
    lowered = name.lower()
    if "cheat" in lowered:
        return "?show=cheats"
    if "credit" in lowered:
        return "?show=mixed&sort=credit"
    if any(word in lowered for word in LENGTHS):
        return "?sort=longest"
    return ""


def label(name: str) -> str:
    """How a series is named on the page: the desk's with their meaning, the trainer's as logged."""
    if name.startswith("desk:"):
        key = name.removeprefix("desk:")
        return f"{key} (desk: {DESK_METRICS.get(key, key)})"
    return name


def default_names(timeline: Timeline) -> list[str]:
    """What the page shows when the URL names nothing: the trainer's entropy, length and reward,
    its evaluations, and the desk's main figures."""
    trainer = list(timeline.trainer)
    picked = [n for n in (role_of(trainer, "entropy"), role_of(trainer, "length"), role_of(trainer, "reward")) if n]
    picked += sorted(n for n in trainer if n.lower().startswith(("eval", "val")) and n not in picked)
    picked += [f"desk:{n}" for n in DEFAULT_DESK if n in timeline.desk]
    return picked[:MAX_CHARTS]


def available_names(timelines: Sequence[tuple[str, Timeline]]) -> list[str]:
    trainer = sorted({n for _, t in timelines for n in t.trainer})
    desk = [f"desk:{n}" for n in DESK_METRICS if any(n in t.desk for _, t in timelines)]
    return trainer + desk


@dataclass(frozen=True)
class RunSeries:
    run: str
    timeline: Timeline


def _steps(runs: Sequence[RunSeries], names: Sequence[str]) -> list[int]:
    return sorted({step for r in runs for n in names for step, _ in r.timeline.series(n)})


def _points(datasets: list[dict[str, Any]]) -> int:
    return sum(value is not None for d in datasets for value in d["data"])


def metric_chart(project: str, runs: Sequence[RunSeries], name: str) -> dict[str, Any]:
    """One metric over steps, a line per run, each point linking to its run's step."""
    steps = _steps(runs, [name])
    query = point_query(name)
    datasets: list[dict[str, Any]] = []
    links: list[list[str | None]] = []
    for r in runs:
        values = dict(r.timeline.series(name))
        datasets.append({"label": r.run, "data": [values.get(s) for s in steps], "spanGaps": True})
        links.append([reverse("step", args=[project, r.run, s]) + query if s in values else None for s in steps])
    return {
        "type": "line",
        "title": label(name),
        "labels": steps,
        "datasets": datasets,
        "links": links,
        "xlabel": "step",
        "points": _points(datasets),
    }


def overlay_chart(project: str, run: RunSeries, first: str, second: str) -> dict[str, Any]:
    """Two metrics of one run on one chart, the second on its own axis."""
    steps = _steps([run], [first, second])
    datasets: list[dict[str, Any]] = []
    links: list[list[str | None]] = []
    for name, axis in ((first, "y"), (second, "y1")):
        values = dict(run.timeline.series(name))
        datasets.append({"label": label(name), "data": [values.get(s) for s in steps], "yAxisID": axis, "spanGaps": True})
        links.append([reverse("step", args=[project, run.run, s]) + point_query(name) if s in values else None for s in steps])
    return {
        "type": "line",
        "title": f"{first} with {second}",
        "labels": steps,
        "datasets": datasets,
        "links": links,
        "xlabel": "step",
        "y2label": second,
        "points": _points(datasets),
    }


def warning_rows(project: str, run: str, warnings: Sequence[HealthWarning]) -> list[dict[str, Any]]:
    """Each warning with its evidence, a link to its steps on the timeline (its series shown) and
    to the step it ends at."""
    rows = []
    for w in warnings:
        shown = "&".join(f"show={name}" for name in w.series)
        rows.append(
            {
                "warning": w,
                "timeline": reverse("run-timeline", args=[project, run]) + f"?from={w.first_step}&to={w.last_step}&{shown}",
                "step": reverse("step", args=[project, run, w.last_step]) + point_query(w.series[0] if w.series else ""),
            }
        )
    return rows
