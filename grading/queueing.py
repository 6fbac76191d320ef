"""Send a Celery task by its name, now or after the transaction commits.

A task module imports the service it calls (in the task's body); a service that imported the task
module back would close a circle. So services never import a `tasks.py`: they name the task, as
Zulip's `queue_event_on_commit("thumbnail", ...)` names its queue, and the worker is the only side
that imports code. The names are the ones the tasks are registered under (`@shared_task(name=...)`),
which messages in flight keep across moves.

Where Celery runs eagerly (no broker: `make run`, SQLite tests) the task runs in this process, as
`.delay()` would run it. A task is looked up in the app's registry each time, so a test that
replaces a task's `delay` on the task object sees the calls.
"""

from __future__ import annotations

from typing import Any

from celery import current_app
from celery.result import AsyncResult
from django.db import transaction


def task_named(name: str) -> Any:
    """The registered task called `name`; the apps' task modules are imported on first need
    (a web process has not imported them: only a worker discovers tasks at start)."""
    tasks = current_app.tasks
    if name not in tasks:
        current_app.loader.import_default_modules()
    return tasks[name]


def queue(name: str, /, *, countdown: float | None = None, **kwargs: Any) -> AsyncResult:
    """Send the task `name` with these keyword arguments now (later by `countdown` seconds)."""
    task = task_named(name)
    if countdown is None:
        return task.delay(**kwargs)
    return task.apply_async(kwargs=kwargs, countdown=countdown)


def queue_on_commit(name: str, /, *, robust: bool = True, countdown: float | None = None, **kwargs: Any) -> None:
    """Send the task `name` once the current transaction commits (at once outside one); nothing
    is sent if it rolls back. `robust`: a broker that refuses the message is logged, not raised
    into the request whose writes have already committed."""
    transaction.on_commit(lambda: queue(name, countdown=countdown, **kwargs), robust=robust)
