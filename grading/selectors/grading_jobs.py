"""The grading page of a step (grading/views/grading.py): its grading jobs and their counts."""

from __future__ import annotations

from django.db.models import Count, Q

from grading.models import GradingJob, Step


def grading_jobs(step: Step) -> list[GradingJob]:
    """The step's grading jobs with their group and verdict, by grader and group uid (one query)."""
    return list(GradingJob.objects.filter(group__step=step).select_related("group", "verdict").order_by("grader", "group__uid"))


def grading_job_counts(step: Step) -> dict[str, int]:
    """How many of the step's grading jobs are queued, running, done and failed (one query)."""
    return GradingJob.objects.filter(group__step=step).aggregate(
        queued=Count("id", filter=Q(status=GradingJob.Status.QUEUED)),
        running=Count("id", filter=Q(status=GradingJob.Status.RUNNING)),
        done=Count("id", filter=Q(status=GradingJob.Status.DONE)),
        failed=Count("id", filter=Q(status=GradingJob.Status.FAILED)),
    )
