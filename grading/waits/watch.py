"""Waiting for a step to turn final in an event loop, holding no thread and no database connection.

Under ASGI (`docker/start.sh waits`, the process nginx sends `?wait=` requests to) a waiting
trainer is a coroutine parked on a future. `StepWatcher.until_final` registers it with its
loop's watcher, whose one task asks `step_status` of each *distinct* watched step once per
POLL_SECONDS (sooner when a pending group's deadline falls back first), on a thread of its own,
and closes that thread's database connection after each round (with DATABASE_POOL_SIZE it
goes back to the process's pool). So 500 waiters on 3 steps cost 3 step statuses every
0.5 s and one connection while a round runs, whatever the number of waiters.

Under WSGI (the gthread site, `make run`'s runserver, Django's test client) there is no
long-lived loop: a request that waits polls in its own thread (`wait_until_final`), holding
it, as before. docs/deployment.md says which requests reach which.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from django.db import connections
from django.utils import timezone

from grading.models import Step
from grading.waits.progress import POLL_SECONDS, step_status

logger = logging.getLogger(__name__)


def poll_round(step_ids: list[int]) -> tuple[set[int], datetime | None]:
    """(the watched steps that are final or gone, the soonest deadline of the others), then
    this thread's connection is given back: nothing is held until the next round."""
    try:
        final: set[int] = set(step_ids)
        deadlines = []
        for step in Step.objects.select_related("run").filter(pk__in=step_ids):
            status = step_status(step)
            if not status.final:
                final.discard(step.pk)
                if status.deadline is not None:
                    deadlines.append(status.deadline)
        return final, min(deadlines, default=None)
    finally:
        connections.close_all()


class StepWatcher:
    """The waiters of one event loop and the one task that polls for them."""

    def __init__(self, *, poll: float = POLL_SECONDS):
        self.poll = poll
        self._waiters: dict[int, set[asyncio.Future]] = {}
        self._task: asyncio.Task | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gagar-step-watcher")

    async def until_final(self, step_id: int, *, seconds: float) -> None:
        """Return once a round has seen the step final (or gone), or after `seconds`."""
        loop = asyncio.get_running_loop()
        woken = loop.create_future()
        self._waiters.setdefault(step_id, set()).add(woken)
        if self._task is None or self._task.done():
            # A context of its own: the task outlives the request that happened to start it.
            self._task = loop.create_task(self._run(), context=contextvars.Context())
        try:
            await asyncio.wait_for(woken, timeout=seconds)
        except TimeoutError:
            pass
        finally:
            waiters = self._waiters.get(step_id)
            if waiters is not None:
                waiters.discard(woken)
                if not waiters:
                    del self._waiters[step_id]

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiters:  # ends when nobody waits (no await between this test and the return)
            try:
                final, deadline = await loop.run_in_executor(self._thread, poll_round, list(self._waiters))
            except Exception:  # the database went away: keep the waiters, try again next round
                logger.exception("polling the watched steps failed")
                final, deadline = set(), None
            for step_id in final:
                for woken in self._waiters.get(step_id, ()):
                    if not woken.done():
                        woken.set_result(None)
            nap = self.poll
            if deadline is not None:  # wake when the soonest pending step falls back, if sooner
                nap = min(nap, max(0.01, (deadline - timezone.now()).total_seconds()))
            await asyncio.sleep(nap)


_watchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, StepWatcher] = weakref.WeakKeyDictionary()


def step_watcher() -> StepWatcher:
    """The running loop's watcher (one per ASGI worker process)."""
    loop = asyncio.get_running_loop()
    if loop not in _watchers:
        _watchers[loop] = StepWatcher()
    return _watchers[loop]
