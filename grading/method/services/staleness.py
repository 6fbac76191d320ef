"""When a step's inputs change: mark it stale and queue its recomputation once per burst.

Inputs change when a verdict lands, a cheat decision is made or a run's active mapping
changes; each of those calls `mark_stale()`, which queues `recompute_step_task` (by name:
grading.queueing) after the commit. An export of a stale or never-computed step computes it
first (grading.method.services.computation)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Exists, F, OuterRef

from grading.method.services.mappings import active_mapping
from grading.models import (
    FactorMapping,
    GradingJob,
    Step,
    StepComputation,
    Verdict,
)
from grading.queueing import queue

logger = logging.getLogger(__name__)


RECOMPUTE_STEP = "grading.advantage_tasks.recompute_step_task"  # grading.method.tasks


def mark_stale(*, step_ids: list[int] | set[int], recompute: bool = True) -> None:
    """Inputs of these steps changed: bump their version and recompute after the commit.

    Recomputed once per burst, not once per verdict: while grading jobs of a step are still
    queued or running (no verdict yet), a verdict only bumps the version and marks the step
    stale; the verdict that leaves none in flight queues the recomputation. Other changes
    (a cheat decision, a mapping) find nothing in flight and queue it at once. compute_step
    notices a newer version when it saves and queues one more round, so the last change is
    never lost; an export or a page computes a stale step itself before reading it.

    `recompute=False` marks them and queues nothing: for a caller that changes many groups
    in a row, each in its own transaction, and then calls mark_stale once for every step it
    touched (grading.jobs.scans.scan_groups). Marked, a step is never read stale meanwhile.
    """
    step_ids = sorted(set(step_ids))
    if not step_ids:
        return
    Step.objects.filter(pk__in=step_ids).update(inputs_version=F("inputs_version") + 1)
    mappings: dict[int, FactorMapping] = {}  # one active-mapping lookup per run, not per step
    active: dict[int, int] = {}  # step id -> its computation under the run's active mapping
    for step in Step.objects.filter(pk__in=step_ids).select_related("run"):
        mapping = mappings.get(step.run_id) or mappings.setdefault(step.run_id, active_mapping(step.run))
        computation, _ = StepComputation.objects.defer("parquet").get_or_create(step=step, mapping=mapping)
        active[step.pk] = computation.pk
    StepComputation.objects.filter(step_id__in=step_ids, stale=False).update(stale=True)
    if not recompute:
        return
    free = [active[s] for s in set(step_ids) - steps_grading(step_ids)]
    queue = list(StepComputation.objects.filter(pk__in=free, recompute_queued=False).values_list("step_id", flat=True))
    StepComputation.objects.filter(step_id__in=queue, pk__in=free).update(recompute_queued=True)
    queue_recompute(queue)


def steps_grading(step_ids) -> set[int]:
    """Those of these steps with a grading job still queued or running and no verdict yet
    from its grader (a verdict stored in the current transaction counts as arrived)."""
    arrived = Verdict.objects.filter(group=OuterRef("group"), grader=OuterRef("grader"))
    in_flight = GradingJob.objects.filter(status__in=[GradingJob.Status.QUEUED, GradingJob.Status.RUNNING]).exclude(
        Exists(arrived)
    )
    step_ids = set(step_ids)
    if len(step_ids) <= FEW_STEPS:
        # A verdict marks one step: stop at its first job in flight rather than list them
        # all, which made a step's grading quadratic in its groups.
        return {step_id for step_id in step_ids if in_flight.filter(group__step_id=step_id).exists()}
    return set(in_flight.filter(group__step_id__in=step_ids).values_list("group__step_id", flat=True).distinct())


FEW_STEPS = 4  # steps_grading asks step by step up to this many


def queue_recompute(step_ids) -> None:
    step_ids = sorted(step_ids)
    if not step_ids:
        return

    def enqueue():
        for step_id in step_ids:
            queue(RECOMPUTE_STEP, step_id=step_id)

    transaction.on_commit(enqueue, robust=True)  # what committed is stored: a failed send is logged (grading.ingest)
