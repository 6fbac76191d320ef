"""A run's step metrics as series: what the trainer logged (grading.models.StepMetric) and what
the desk computes from the rollouts, groups, grading jobs and stored advantages it holds.

Every series is a list of (step number, value), steps ascending, within an optional range. The
desk's figures take four aggregate queries whatever the run's size:

- rollouts: `pass_rate` (share of rollouts with a reward of 1), `tokens` and `messages` (means
  over the rollouts that report them), `cost_usd` (the step's sum);
- groups: `mixed_share`, `distinct_solutions` (the mean of mixed groups' distinct solutions);
- grading jobs: `grading_latency_s` (mean seconds a grading conversation took);
- stored advantages under the active mapping: `t1_share` (of graded passes), `cheat_share` (of
  passes), `credit_moved_share` (Σ max(0, A − A*) / Σ A over passes: the passes' credit that
  changed hands), `credit_imbalance` (Σ A* − Σ A over the passes: zero when the export was
  sum-preserving), and `fallback_share` (mixed groups that fell back instead of being graded).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Avg, Count, F, Q, Sum, Value
from django.db.models.functions import Greatest

from grading.health.warnings import HealthWarning, Thresholds, health_warnings
from grading.models import AdvantageResult, FactorMapping, GradingJob, Group, Project, Rollout, Run, StepMetric

Series = list[tuple[int, float]]

DESK_METRICS: dict[str, str] = {
    "pass_rate": "share of rollouts that passed",  # nosec B105: a metric's label, not a password
    "mixed_share": "share of groups with passes and failures",
    "tokens": "mean tokens a rollout",
    "messages": "mean messages a rollout",
    "cost_usd": "the rollouts' cost, US dollars",
    "distinct_solutions": "mean distinct solutions a mixed group",
    "t1_share": "share of graded passes in T1",
    "cheat_share": "share of passes marked cheats",
    "credit_moved_share": "share of the passes' credit redistribution moved",
    "credit_imbalance": "Σ A* − Σ A over passes (0 when sum-preserving)",
    "fallback_share": "share of mixed groups that fell back",
    "grading_latency_s": "mean seconds a grading conversation took",
}


@dataclass
class Timeline:
    steps: list[int] = field(default_factory=list)  # every step with a trainer metric or a group, ascending
    trainer: dict[str, Series] = field(default_factory=dict)
    desk: dict[str, Series] = field(default_factory=dict)

    def series(self, name: str) -> Series:
        """A series by name: the desk's as `desk:<name>`, the trainer's as it logged it."""
        if name.startswith("desk:"):
            return self.desk.get(name.removeprefix("desk:"), [])
        return self.trainer.get(name, [])


def _in_range(queryset, key: str, first: int | None, last: int | None):
    if first is not None:
        queryset = queryset.filter(**{f"{key}__gte": first})
    if last is not None:
        queryset = queryset.filter(**{f"{key}__lte": last})
    return queryset


def metric_names(run: Run) -> list[str]:
    """The names the trainer logged for the run, sorted."""
    return sorted(StepMetric.objects.filter(run=run).values_list("name", flat=True).distinct())


def trainer_series(
    run: Run, *, names: list[str] | None = None, first: int | None = None, last: int | None = None
) -> dict[str, Series]:
    """What the trainer logged, by name (every name when `names` is None). One query."""
    rows = _in_range(StepMetric.objects.filter(run=run), "step_number", first, last)
    if names is not None:
        rows = rows.filter(name__in=names)
    out: dict[str, Series] = defaultdict(list)
    for name, step, value in rows.order_by("name", "step_number").values_list("name", "step_number", "value"):
        out[name].append((step, value))
    return dict(out)


def _ratio(part: float | None, whole: float | None) -> float | None:
    return None if not whole else float(part or 0) / float(whole)


def _rollout_figures(rollouts, key: str) -> Iterator[tuple[Any, dict[str, float | None]]]:
    """(key, {pass_rate, tokens, messages, cost_usd}) of `rollouts` grouped by `key`, one query:
    the pass rate over rollouts with a known reward, tokens and messages as means over the
    rollouts that report them, cost as their sum. The timeline groups by step, a comparison of
    runs by task."""
    rows = rollouts.values(key).annotate(
        n_known=Count("id", filter=Q(reward__isnull=False)),
        n_passed=Count("id", filter=Q(reward=1.0)),
        tokens=Avg("tokens"),
        messages=Avg("n_messages"),
        cost=Sum("cost_usd"),
    )
    for row in rows:
        yield (
            row[key],
            {
                "pass_rate": _ratio(row["n_passed"], row["n_known"]),
                "tokens": row["tokens"],
                "messages": row["messages"],
                "cost_usd": row["cost"],
            },
        )


def desk_series(run: Run, mapping: FactorMapping, *, first: int | None = None, last: int | None = None) -> dict[str, Series]:
    """The desk's own figures per step (see the module's docstring). Four queries."""
    per_step: dict[str, dict[int, float]] = defaultdict(dict)

    def put(name: str, step: int, value: float | None) -> None:
        if value is not None:
            per_step[name][step] = round(float(value), 6)

    rollouts = _in_range(Rollout.objects.filter(group__run=run), "group__step__number", first, last)
    for key, figures in _rollout_figures(rollouts, "group__step__number"):
        for name, value in figures.items():
            put(name, key, value)

    groups = (
        _in_range(Group.objects.filter(run=run), "step__number", first, last)
        .values("step__number")
        .annotate(
            n=Count("id"),
            n_mixed=Count("id", filter=Q(is_mixed=True)),
            solutions=Avg("distinct_solutions", filter=Q(is_mixed=True)),
        )
    )
    mixed: dict[int, int] = {}
    for row in groups:
        step = row["step__number"]
        mixed[step] = row["n_mixed"]
        put("mixed_share", step, _ratio(row["n_mixed"], row["n"]))
        put("distinct_solutions", step, row["solutions"])

    latency = (
        _in_range(GradingJob.objects.filter(group__run=run, latency_s__isnull=False), "group__step__number", first, last)
        .values("group__step__number")
        .annotate(mean=Avg("latency_s"))
    )
    for row in latency:
        put("grading_latency_s", row["group__step__number"], row["mean"])

    passes = Q(passed=True) & ~Q(status="dropped")
    advantages = (
        _in_range(AdvantageResult.objects.filter(step__run=run, mapping=mapping), "step_number", first, last)
        .values("step_number")
        .annotate(
            n_passes=Count("id", filter=passes),
            n_graded=Count("id", filter=passes & Q(status="graded")),
            n_t1=Count("id", filter=passes & Q(status="graded", tier="T1")),
            n_cheat=Count("id", filter=passes & Q(cheat=True)),
            credit=Sum("advantage", filter=passes & Q(status="graded")),
            credit_after=Sum("redistributed_advantage", filter=passes & Q(status="graded")),
            given_up=Sum(Greatest(F("advantage") - F("redistributed_advantage"), Value(0.0)), filter=passes & Q(status="graded")),
            graded_groups=Count("uid", filter=Q(status="graded"), distinct=True),
        )
    )
    for row in advantages:
        step = row["step_number"]
        put("t1_share", step, _ratio(row["n_t1"], row["n_graded"]))
        put("cheat_share", step, _ratio(row["n_cheat"], row["n_passes"]))
        put("credit_moved_share", step, _ratio(row["given_up"], row["credit"]))
        if row["n_graded"]:
            put("credit_imbalance", step, (row["credit_after"] or 0.0) - (row["credit"] or 0.0))
        if mixed.get(step):
            put("fallback_share", step, max(0.0, 1.0 - row["graded_groups"] / mixed[step]))
    return {name: sorted(values.items()) for name, values in per_step.items()}


def run_timeline(
    run: Run, mapping: FactorMapping, *, names: list[str] | None = None, first: int | None = None, last: int | None = None
) -> Timeline:
    """The trainer's series and the desk's for the run, within [first, last]. Five queries."""
    trainer = trainer_series(run, names=names, first=first, last=last)
    desk = desk_series(run, mapping, first=first, last=last)
    steps = sorted({s for series in (*trainer.values(), *desk.values()) for s, _ in series})
    return Timeline(steps=steps, trainer=trainer, desk=desk)


@dataclass
class RunHealth:
    timeline: Timeline
    warnings: list[HealthWarning]
    thresholds: Thresholds  # what raised them: the project's


def run_health(
    run: Run,
    mapping: FactorMapping,
    *,
    names: list[str] | None = None,
    first: int | None = None,
    last: int | None = None,
    project: Project | None = None,
) -> RunHealth:
    """The run's timeline within [first, last] and the warnings it raises under its project's
    thresholds (`project`: the run's, when the caller has it already). The warnings read every
    logged series whatever `names` asks to show. Five queries."""
    timeline = run_timeline(run, mapping, first=first, last=last)
    thresholds = Thresholds.from_dict((project or run.project).health_thresholds)
    warnings = health_warnings(timeline.trainer, timeline.desk, thresholds)
    if names is not None:
        timeline.trainer = {name: series for name, series in timeline.trainer.items() if name in names}
    return RunHealth(timeline, warnings, thresholds)


TASK_FIGURES = ("pass_rate", "messages", "tokens")


def task_figures(run: Run, step: int) -> dict[str, dict[str, float]]:
    """Per figure (TASK_FIGURES), each task's mean over its rollouts at `step` of `run`, by the
    task's instance id. One query."""
    out: dict[str, dict[str, float]] = {name: {} for name in TASK_FIGURES}
    rollouts = Rollout.objects.filter(group__run=run, group__step__number=step)
    for task, figures in _rollout_figures(rollouts, "group__task__instance_id"):
        for name in TASK_FIGURES:
            value = figures[name]
            if value is not None:
                out[name][task] = float(value)
    return out
