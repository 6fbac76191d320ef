"""Caps on trainers waiting for a step (`GET /api/v1/advantages/?wait=`), shared by every web process.

A waiting request holds a server thread for up to MAX_WAIT_SECONDS, so waiters without a
bound starve pages (one token's 128 waiters once left the site answering 2 probes of 10).
`take_waiter_slot` admits a waiter only while its token (or session user) holds fewer than
GAGAR_WAITERS_PER_TOKEN, its project fewer than GAGAR_WAITERS_PER_PROJECT and the site fewer
than GAGAR_WAITERS_TOTAL; beyond them it raises `WaitersFull` (the API answers 429 with Retry-After, and the client backs off).

Each waiter is a `StepWaiter` row, written first and then ranked among the live rows by id
(increment first, then decide), so two waiters arriving at once cannot both take the last
slot, in any process. A row names when it expires (its wait and a margin), so a process
killed mid-wait frees its slots within minutes without anyone cleaning up.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from grading.models import Project, StepWaiter

RETRY_AFTER_SECONDS = 10  # what a refused waiter is told; waits are long, so slots free up slowly
_MARGIN = timedelta(seconds=30)  # a row outlives its wait by this much (the answer still has to be written)


class WaitersFull(Exception):
    """No slot for another waiter; `str()` says which cap, `retry_after` when to try again."""

    def __init__(self, message: str, *, retry_after: int = RETRY_AFTER_SECONDS):
        super().__init__(message)
        self.retry_after = retry_after


def take_waiter_slot(*, project: Project, holder: str, seconds: float) -> int:
    """One waiter slot for `holder` (`token:<id>` or `user:<id>`) in `project`; its id, for
    `release_waiter_slot`. Raises WaitersFull, holding nothing, when a cap is reached."""
    now = timezone.now()
    StepWaiter.objects.filter(expires_at__lte=now).delete()
    slot = StepWaiter.objects.create(project=project, holder=holder, expires_at=now + timedelta(seconds=seconds) + _MARGIN)
    try:
        ahead = StepWaiter.objects.filter(expires_at__gt=now, pk__lte=slot.pk)  # this one and those that came before it
        caps = (
            (ahead.filter(project=project, holder=holder), settings.GAGAR_WAITERS_PER_TOKEN, "this token"),
            (ahead.filter(project=project), settings.GAGAR_WAITERS_PER_PROJECT, f"project {project.name!r}"),
            (ahead, settings.GAGAR_WAITERS_TOTAL, "this server"),
        )
        for rows, cap, whose in caps:
            if rows.count() > cap:
                raise WaitersFull(
                    f"{whose} already has {cap} requests waiting for a step (the most it may); "
                    f"try again after {RETRY_AFTER_SECONDS} s, or ask without wait="
                )
    except BaseException:
        release_waiter_slot(slot.pk)
        raise
    return slot.pk


def release_waiter_slot(slot: int) -> None:
    StepWaiter.objects.filter(pk=slot).delete()
