"""Celery task of highlighting ahead: thin, it takes ids and calls one service (imported in the body)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="grading.highlight_rollouts", acks_late=True, max_retries=0)
def highlight_rollouts_task(*, rollout_ids: list[int]) -> int:
    from grading.highlights.service import highlight_rollouts

    return highlight_rollouts(rollout_ids)
