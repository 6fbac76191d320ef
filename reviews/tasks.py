"""Celery tasks of the review desk: thin, take ids, call a service (imported in the body)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="reviews.warm_calibration", acks_late=True, max_retries=0, ignore_result=True)
def warm_calibration_task(*, run_id: int) -> dict:
    """Compute the run's calibration figures into the shared cache after judgments changed."""
    from reviews.services.calibration import warm_calibration

    return warm_calibration(run_id=run_id)
