"""Celery tasks of the advantage engine: thin, take ids, call a service (imported in the body)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="grading.advantage_tasks.recompute_step_task", acks_late=True, max_retries=0)
def recompute_step_task(*, step_id: int) -> dict:
    """Recompute a step under its run's active mapping (batched: one task per step, not per group)."""
    from grading.method.services.computation import compute_step
    from grading.method.services.mappings import active_mapping
    from grading.models import Step

    step = Step.objects.select_related("run").filter(pk=step_id).first()
    if step is None:  # deleted since it was queued
        return {"step_id": step_id, "skipped": "step no longer exists"}
    computation = compute_step(step=step, mapping=active_mapping(step.run), unless_current=True)
    return {"step_id": step_id, "rows": computation.n_rows}
