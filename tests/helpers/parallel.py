"""What the test processes of `make test` (pytest-xdist, one a core) must not share, and the
order they take files in. pytest-django gives each a test database of its own (_gw0, _gw1);
here: Celery queues of their own (`own_queues`), the default mapping back after a
transactional test's flush (`restore_default_mapping`), files with slow tests first
(`slow_files_first`). tests/conftest.py calls them."""

from __future__ import annotations

import os


def own_queues(worker: str) -> None:
    """Celery queues named after the xdist worker (celery-gw0, grading-gw0) on the one broker,
    in the settings, the Celery app and the environment: the real workers its tests start
    (tests.helpers.workers passes the environment on) take only its tasks, and its
    `app.control.purge()` empties only its queues."""
    from django.conf import settings

    from gagar_web.celery import app

    default, grading = f"celery-{worker}", f"grading-{worker}"
    os.environ["GAGAR_DEFAULT_QUEUE"], os.environ["GAGAR_GRADING_QUEUE"] = default, grading
    routes = {name: {"queue": grading} for name in settings.CELERY_TASK_ROUTES}
    settings.CELERY_TASK_DEFAULT_QUEUE, settings.GAGAR_GRADING_QUEUE, settings.CELERY_TASK_ROUTES = default, grading, routes
    app.conf.task_default_queue, app.conf.task_routes = default, routes


def restore_default_mapping(sender, **kwargs) -> None:
    """post_migrate receiver. A transactional test (django_db(transaction=True)) ends by
    flushing every table, the default mapping that migration 0003 created included, and the
    flush ends with post_migrate: put the row back, so the tests after it find the database as
    migrations leave it. Alone, pytest-django runs every transactional test after the others;
    under xdist a process runs whole files, so a file's tests may follow another's
    transactional one (a page that finds no default mapping creates it, with queries a pinned
    count does not expect)."""
    if sender.label == "grading":
        from grading.method.services.mappings import default_mapping

        default_mapping()


def slow_files_first(items) -> None:
    """Under xdist (`make test`: --dist loadfile --no-loadscope-reorder) each process takes
    whole files in collection order: the files with a test marked `slow` go first, so the long
    ones start early and the many short files even out the end. The order within a file stays
    as pytest-django left it (every worker sorts alike, as xdist requires)."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)
