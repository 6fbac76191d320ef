"""The grading worker: where grading conversations run, and what one holds while it waits.

An LLM grading conversation spends nearly all of its life waiting on the model (minutes a
group with a real one). On a thread pool each conversation held a thread and, through it, a
database connection for that whole time, so a worker's conversations were bounded by its
threads and its connections grew with them until PostgreSQL refused clients. Grading tasks go
to a queue of their own (GAGAR_GRADING_QUEUE, settings.CELERY_TASK_ROUTES), taken by a Celery
worker on the **gevent pool** (`docker/start.sh grader`: `-P gevent -c 256`): a conversation
is a greenlet, a wait on the model is a socket read the hub multiplexes, and one process holds
hundreds of conversations for the memory of their histories. Monkey patching covers what a
conversation touches: the openai client's sockets, psycopg 3 (it waits cooperatively under
gevent from 3.1.14), Redis, the git and bubblewrap subprocesses of the workspace tools, and
Django's connections, which are per greenlet (threading.local, patched).

What the green pool does not do as the prefork pool does, handled here:

- **Connections.** A conversation gives its database connection back while it waits
  (`release_connections`, called by grading.jobs.grade.grade_group between loading the
  workspace and storing the verdict); with DATABASE_POOL_SIZE set, connections come from the
  process's psycopg pool, so the process uses at most that many whatever its concurrency.
- **The soft time limit.** The gevent pool enforces only the hard one; `soft_time_limit`
  raises SoftTimeLimitExceeded after the task's soft limit, so the task stores its timeout
  verdict as it does on prefork.
- **Children.** gevent's child watcher reaps every child (waitpid(-1) on SIGCHLD), which
  takes the sandbox's own wait4 (the check's exit status and CPU time) from it. The worker
  must run with GEVENT_NOWAITPID=1 (subprocesses stay cooperative: gevent polls for them);
  `check_worker` refuses to start a green worker without it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, InterfaceError, connections

logger = logging.getLogger(__name__)

NO_CHILD_WATCH = "GEVENT_NOWAITPID"
GREEN_ENV = {NO_CHILD_WATCH: "1"}  # what a green grading worker's environment needs (start.sh, tests, benchmarks)


def is_green() -> bool:
    """Whether this process runs under gevent's monkey patching (the gevent pool)."""
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and bool(monkey.is_module_patched("socket"))


def check_worker() -> None:
    """A green worker must not let gevent reap the sandbox's children (module docstring).
    Called at worker start (celery's worker_init, gagar_web.celery); SystemExit, which Celery's
    signal dispatch does not swallow, so the worker stops with the reason."""
    if not is_green():
        return
    import gevent  # type: ignore[import-untyped]  # no types shipped; types-gevent is not a dependency

    if not gevent.config.disable_watch_children:
        raise SystemExit(
            f"the gevent pool needs {NO_CHILD_WATCH}=1 in the worker's environment: gevent's child watcher "
            "would otherwise reap the sandbox's checks before it reads their exit status and CPU time "
            "(docker/start.sh grader sets it)"
        )


def worker_queues() -> list[str]:
    """Every queue this desk sends tasks to: what a worker that takes all tasks consumes."""
    return [settings.CELERY_TASK_DEFAULT_QUEUE, settings.GAGAR_GRADING_QUEUE]


def release_connections() -> None:
    """Give back this conversation's database connections (to the pool with DATABASE_POOL_SIZE,
    closed otherwise); the next query takes or opens one again. Inside a transaction (a
    caller's atomic block, a test's) nothing is released. An in-memory SQLite database ignores
    the close (Django keeps it, or the database would be gone)."""
    opened = connections.all(initialized_only=True)
    if any(conn.in_atomic_block for conn in opened):
        return
    for conn in opened:
        try:
            conn.close()
        except (InterfaceError, DatabaseError):  # already broken: it is gone either way
            logger.debug("closing connection %s failed", conn.alias, exc_info=True)


def soft_limit_of(task) -> float | None:
    """The soft time limit (seconds) the running task is under: its message's, its own, the app's."""
    limits = getattr(task.request, "timelimit", None) or (None, None)
    return limits[1] or task.soft_time_limit or task.app.conf.task_soft_time_limit


@contextmanager
def soft_time_limit(seconds: float | None) -> Iterator[None]:
    """In a green worker, SoftTimeLimitExceeded when the block runs past `seconds`, as the
    prefork pool's signal does; elsewhere nothing (prefork raises its own). The timer is a
    gevent.Timeout, a BaseException, so no `except Exception` on the way (the grader's fallback
    boundary, the openai client's retry loop) turns it into a model error; it becomes
    SoftTimeLimitExceeded once out of the block. A query it cut short leaves its connection
    unusable: the connections are given back first."""
    if not seconds or not is_green():
        yield
        return
    from gevent import Timeout

    timer = Timeout(seconds)
    timer.start()
    try:
        yield
    except Timeout as exc:
        if exc is not timer:  # the pool's hard limit, or a timeout of the code's own
            raise
        release_connections()
        raise SoftTimeLimitExceeded(f"soft time limit ({seconds:g} s) exceeded") from None
    finally:
        timer.close()
