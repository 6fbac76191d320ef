"""The Celery app. Tasks live next to the service they call (grading/<concept>/tasks.py), take ids,
and keep the names they were queued under, so messages in flight survive a move."""

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_web.settings")

app = Celery("gagar_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["grading.ingest", "grading.search", "grading.highlights", "grading.jobs", "grading.method", "reviews"])

# `celery -A gagar_web beat` (docker-compose.yml's beat service) sends these; any worker runs them.
app.conf.beat_schedule = {
    "remove-orphan-uploads": {"task": "grading.remove_orphan_uploads", "schedule": 3600.0},
    "tidy-repo-cache": {"task": "grading.tidy_repo_cache", "schedule": 3600.0},
    "expire-person-waits": {"task": "grading.expire_person_waits", "schedule": 60.0},
    "sweep-grading-jobs": {"task": "grading.sweep_grading_jobs", "schedule": 60.0},
}


@worker_init.connect
def _check_grading_worker(**_) -> None:
    """A gevent-pool worker must leave the sandbox's children to it (grading.jobs.worker)."""
    from grading.jobs.worker import check_worker

    check_worker()
