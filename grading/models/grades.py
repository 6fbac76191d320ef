"""What the grader said: verdicts, per-rollout grades, cheat decisions, and the grading jobs
that produce them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from grading.method.tiers import TIER_CHOICES


class Verdict(models.Model):
    """A grader's judgment of one mixed group. One per group per grader version."""

    class Status(models.TextChoices):
        VALID = "valid", "Valid"
        INVALID = "invalid", "Invalid (falls back)"
        TIMEOUT = "timeout", "Timed out (falls back)"

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="verdicts")
    grader = models.CharField(max_length=100, help_text="grader name and version, e.g. heuristic@1 or gpt-x@2026-11")
    status = models.CharField(max_length=10, choices=Status.choices)
    errors = models.JSONField(default=list, blank=True)
    raw = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["group", "grader"], name="one_verdict_per_group_per_grader")]

    def __str__(self) -> str:
        return f"{self.grader} on {self.group_id} ({self.status})"


class RolloutGrade(models.Model):
    """The verdict's judgment of one passing rollout."""

    # T1, T2, T3 (grading.method.tiers). The Enum functional API, which django-stubs types only as a class.
    Tier = models.TextChoices("Tier", TIER_CHOICES)  # type: ignore[call-overload]

    verdict = models.ForeignKey(Verdict, on_delete=models.CASCADE, related_name="grades")
    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="grades")
    tier = models.CharField(max_length=2, choices=Tier.choices)
    rank = models.PositiveIntegerField()
    scores = models.JSONField(default=dict, blank=True)
    cheat = models.BooleanField(default=False)
    evidence = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verdict", "rollout"], name="one_grade_per_rollout_per_verdict")]


class CheatDecision(models.Model):
    """A cheat signal and its audit. Only a confirmed one zeroes the reward (docs/method.md §1)."""

    class Source(models.TextChoices):
        GRADER = "grader", "Grader flag"
        PRESCREEN = "prescreen", "Deterministic prescreen"
        REVIEWER = "reviewer", "Reviewer"
        SEARCH = "search", "Search (an auditor's query)"

    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="cheat_decisions")
    source = models.CharField(max_length=10, choices=Source.choices)
    confirmed = models.BooleanField(null=True, help_text="empty until audited; true = confirmed cheat; false = overturned")
    reason = models.TextField(blank=True)
    # Who raised it, as the audit names them: the grader's name, "prescreen", the reviewer
    # or the auditor whose search it was; and what it cites (grader evidence items).
    author = models.CharField(max_length=150, blank=True)
    evidence = models.JSONField(default=list, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class GradingJob(models.Model):
    """One group queued for one grader: what the grader-run page shows. The verdict itself is
    unique per (group, grader), so a redelivered task finds it and makes no second call."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="grading_jobs")
    grader = models.CharField(max_length=100)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    verdict = models.ForeignKey(Verdict, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    latency_s = models.FloatField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["group_id"]
        constraints = [models.UniqueConstraint(fields=["group", "grader"], name="one_grading_job_per_group_per_grader")]
