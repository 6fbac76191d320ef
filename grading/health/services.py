"""Storing a trainer's step metrics (all of a post or none, one row per (run, step, name)) and a
project's health thresholds (what raises a run's warnings, grading.health.warnings)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from grading.health.metrics import MetricValue
from grading.health.warnings import Thresholds
from grading.models import Project, Run, StepMetric

logger = logging.getLogger(__name__)


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


@transaction.atomic
def set_health_thresholds(*, project: Project, user, values: Mapping[str, object]) -> Thresholds:
    """Store the project's thresholds: the defaults overridden by `values` (checked by
    Thresholds.checked: ThresholdsRefused naming each bad field, and nothing stored); `{}` resets
    them to the defaults. Only the values that differ from a default are stored, so a default the
    project never changed follows the method's. Who changed them and when is kept on the project,
    and what changed is logged. The runs' warnings use them from their next reading."""
    thresholds = Thresholds.checked(values)
    stored = Project.objects.select_for_update().values_list("health_thresholds", flat=True).get(pk=project.pk)
    before = Thresholds.from_dict(stored)
    project.health_thresholds = thresholds.overrides()
    project.health_thresholds_updated_by = user
    project.health_thresholds_updated_at = timezone.now()
    project.save(update_fields=["health_thresholds", "health_thresholds_updated_by", "health_thresholds_updated_at"])
    changes = {
        name: (getattr(before, name), value) for name, value in thresholds.as_dict().items() if getattr(before, name) != value
    }
    logger.info(
        "health thresholds of project %s changed by %s: %s",
        project.name,
        getattr(user, "username", None) or "-",
        ", ".join(f"{name} {old:g} -> {new:g}" for name, (old, new) in changes.items()) or "nothing",
    )
    return thresholds
