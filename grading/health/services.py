"""Storing a trainer's step metrics: all of a post or none, one row per (run, step, name)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from grading.health.metrics import MetricValue
from grading.models import Run, StepMetric


@dataclass(frozen=True)
class Logged:
    created: int  # names new at their step
    changed: int  # a value that replaced another
    unchanged: int  # posted again as it was: nothing written

    def as_dict(self) -> dict[str, int]:
        return {"created": self.created, "changed": self.changed, "unchanged": self.unchanged}


def record_metrics(*, run: Run, values: list[MetricValue]) -> Logged:
    """Store `values` (checked by grading.health.metrics.parse_metrics) for `run`. Posting the same
    values again writes nothing; a new value for a (step, name) replaces the old one; within one
    post the last value of a (step, name) is the one kept. Two queries and one write."""
    latest = {(v.step, v.name): v.value for v in values}
    steps = {step for step, _ in latest}
    names = {name for _, name in latest}
    with transaction.atomic():
        stored = {
            (step, name): value
            for step, name, value in StepMetric.objects.select_for_update()
            .filter(run=run, step_number__in=steps, name__in=names)
            .values_list("step_number", "name", "value")
        }
        writes = [
            StepMetric(run=run, step_number=step, name=name, value=value, logged_at=timezone.now())
            for (step, name), value in latest.items()
            if stored.get((step, name)) != value
        ]
        if writes:
            StepMetric.objects.bulk_create(
                writes,
                update_conflicts=True,
                unique_fields=["run", "step_number", "name"],
                update_fields=["value", "logged_at"],
                batch_size=1_000,
            )
    changed = sum(1 for w in writes if (w.step_number, w.name) in stored)
    return Logged(created=len(writes) - changed, changed=changed, unchanged=len(latest) - len(writes))
