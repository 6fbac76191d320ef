"""The Celery app. Tasks live next to the code they run (grading/tasks.py) and take ids."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_web.settings")

app = Celery("gagar_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(related_name="advantage_tasks")
